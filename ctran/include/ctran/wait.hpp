// Waiting on peers without burning a core and without hanging forever.
//
// Ranks may outnumber cores (CI has 2), so a wait spins (for RCCLX_SPIN_US, or RCCLX_SPIN_BUSY_US
// while the machine has more runnable threads than cores: spin_budget.hpp), then yields, then
// sleeps: on a futex when it waits on one SignalCell, in short naps when it polls several
// conditions. Every wait carries a Deadline; when it passes, the wait throws TimeoutError with a
// message naming what (and whom) it waited for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace ctran {

/// A point in time after which waits give up.
class Deadline {
 public:
  /// Deadline `ms` milliseconds from now (RCCLX_TIMEOUT_MS when ms < 0).
  static Deadline after(int64_t ms = -1);
  /// Deadline `knobMs` from now, where `knobMs` is RCCLX_TIMEOUT_MS as a communicator read it
  /// at creation (timeout messages name the knob).
  static Deadline afterKnob(int64_t knobMs);
  bool expired() const { return std::chrono::steady_clock::now() >= at_; }
  int64_t timeoutMs() const { return timeoutMs_; }
  std::chrono::steady_clock::time_point at() const { return at_; }
  /// True when the length came from RCCLX_TIMEOUT_MS (timeout messages then name the knob).
  bool fromKnob() const { return fromKnob_; }

 private:
  std::chrono::steady_clock::time_point at_;
  int64_t timeoutMs_ = 0;
  bool fromKnob_ = false;
};

/// Escalating pause for polling loops: spin, then sched_yield, then sleep in growing naps.
class Backoff {
 public:
  Backoff() : start_(std::chrono::steady_clock::now()) {}
  /// Pauses once; call after each poll that found nothing to do.
  void pause();
  /// Call after a poll that made progress.
  void reset();
  /// How long this backoff has been pausing since the last reset.
  int64_t waitedUs() const;

 private:
  std::chrono::steady_clock::time_point start_;
  int64_t spinUs_ = -1;  ///< the spin budget, read at the first pause that looks at the clock
  uint32_t rounds_ = 0;
  bool spinRanOut_ = false;  ///< whether this wait has told spinRanOut() yet
};

/// A 64-bit counter in (possibly shared) memory that peers bump and a waiter sleeps on.
/// Layout is fixed (it lives in shared-memory segments): one cache line.
struct alignas(64) SignalCell {
  std::atomic<uint64_t> value;    ///< monotonically increasing
  std::atomic<uint32_t> waiters;  ///< processes sleeping on `value` (futex on its low word)
  uint32_t pad_[13];
};
static_assert(sizeof(SignalCell) == 64, "SignalCell must be one cache line");

/// Adds `delta` with release ordering and wakes sleepers. Safe across processes.
void signalAdd(SignalCell* cell, uint64_t delta);

/// Acquire-loads the counter.
inline uint64_t signalRead(const SignalCell* cell) {
  return cell->value.load(std::memory_order_acquire);
}

/// Blocks until cell->value >= target (acquire). Every few milliseconds of sleep it calls
/// `check` (which may throw, e.g. when a peer died) and it throws TimeoutError with
/// "timed out after N ms waiting for <what()>" at the deadline (peer() = `peer`, the rank that
/// signals the cell, if one). Returns the value seen.
uint64_t signalWait(SignalCell* cell, uint64_t target, const Deadline& deadline,
                    const std::function<std::string()>& what,
                    const std::function<void()>& check = nullptr, int peer = -1);

/// Polls `ready` with a Backoff until it returns true; same deadline and check semantics.
void waitUntil(const std::function<bool()>& ready, const Deadline& deadline,
               const std::function<std::string()>& what,
               const std::function<void()>& check = nullptr);

/// Throws the TimeoutError a wait (on `peer`, if one) raises at its deadline.
[[noreturn]] void throwTimeout(const Deadline& deadline, const std::string& what, int peer = -1);

}  // namespace ctran
