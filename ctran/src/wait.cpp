// Implementation of wait.hpp: backoff, futex-backed signal cells, deadlines.
#include "ctran/wait.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "spinning.hpp"

namespace ctran {
namespace {

using Clock = std::chrono::steady_clock;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// The futex word is the low 32 bits of the 64-bit counter (little-endian hosts).
inline uint32_t* futexWord(SignalCell* cell) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "futex word layout assumes little endian");
  return reinterpret_cast<uint32_t*>(&cell->value);
}

void futexWait(SignalCell* cell, uint32_t expected, int64_t maxNs) {
  struct timespec ts;
  ts.tv_sec = maxNs / 1000000000;
  ts.tv_nsec = maxNs % 1000000000;
  // Not FUTEX_PRIVATE: the cell may live in memory shared between processes.
  syscall(SYS_futex, futexWord(cell), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futexWakeAll(SignalCell* cell) {
  syscall(SYS_futex, futexWord(cell), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

constexpr int64_t kSleepSliceNs = 2'000'000;  // re-check liveness and deadline every 2 ms
// A spin yields its core from this long on: a peer the scheduler put on the same core can run
// only then (without another task there, a yield returns at once).
constexpr int64_t kYieldAfterUs = 5;

}  // namespace

Deadline Deadline::after(int64_t ms) {
  Deadline d;
  d.fromKnob_ = ms < 0;
  d.timeoutMs_ = ms >= 0 ? ms : knob::RCCLX_TIMEOUT_MS();
  d.at_ = Clock::now() + std::chrono::milliseconds(d.timeoutMs_);
  return d;
}

Deadline Deadline::afterKnob(int64_t knobMs) {
  Deadline d;
  d.fromKnob_ = true;
  d.timeoutMs_ = knobMs;
  d.at_ = Clock::now() + std::chrono::milliseconds(knobMs);
  return d;
}

void throwTimeout(const Deadline& deadline, const std::string& what, int peer) {
  std::string knob =
      deadline.fromKnob() ? strCat(" (RCCLX_TIMEOUT_MS=", deadline.timeoutMs(), ")") : "";
  throw TimeoutError(
      strCat("timed out after ", deadline.timeoutMs(), " ms waiting for ", what, knob), peer);
}

void Backoff::reset() {
  start_ = Clock::now();
  rounds_ = 0;
  spinRanOut_ = false;
}

int64_t Backoff::waitedUs() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_).count();
}

void Backoff::pause() {
  ++rounds_;
  if ((rounds_ & 63) != 0) {  // read the clock only every 64 rounds
    cpuRelax();
    return;
  }
  // Read here, not per Backoff: most polls end before their first clock check.
  if (spinUs_ < 0) spinUs_ = spinBudgetUs();
  int64_t waited = waitedUs();
  if (waited < spinUs_) {
    cpuRelax();
    return;
  }
  if (!spinRanOut_) {
    spinRanOut_ = true;
    spinRanOut();
  }
  if (waited < spinUs_ + 1000) {
    yieldCore();
  } else {
    // Naps grow with the wait, capped at 200 us, so a long wait costs little CPU.
    int64_t napUs = std::min<int64_t>(200, 10 + waited / 100);
    std::this_thread::sleep_for(std::chrono::microseconds(napUs));
  }
}

void signalAdd(SignalCell* cell, uint64_t delta) {
  cell->value.fetch_add(delta, std::memory_order_seq_cst);
  // Pairs with the waiter's seq_cst increment of `waiters` before its re-check (Dekker):
  // either we see the waiter, or it sees our new value.
  if (cell->waiters.load(std::memory_order_seq_cst) != 0) futexWakeAll(cell);
}

uint64_t signalWait(SignalCell* cell, uint64_t target, const Deadline& deadline,
                    const std::function<std::string()>& what, const std::function<void()>& check,
                    int peer) {
  uint64_t v = cell->value.load(std::memory_order_acquire);
  if (v >= target) return v;
  const int64_t spinUs = spinBudgetUs();
  auto start = Clock::now();
  uint32_t rounds = 0;
  // Phase 1: spin (and yield once past half the spin budget).
  for (;;) {
    v = cell->value.load(std::memory_order_acquire);
    if (v >= target) return v;
    if ((++rounds & 63) != 0) {
      cpuRelax();
      continue;
    }
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
    if (us >= spinUs) break;
    if (us >= std::min<int64_t>(spinUs / 2, kYieldAfterUs)) yieldCore();
  }
  spinRanOut();
  // Phase 2: sleep on the futex in slices, checking peers and the deadline between slices.
  for (;;) {
    cell->waiters.fetch_add(1, std::memory_order_seq_cst);
    v = cell->value.load(std::memory_order_seq_cst);
    if (v < target) futexWait(cell, static_cast<uint32_t>(v), kSleepSliceNs);
    cell->waiters.fetch_sub(1, std::memory_order_seq_cst);
    v = cell->value.load(std::memory_order_acquire);
    if (v >= target) return v;
    // A peer may signal and exit between that load and the liveness check: look once more
    // before reporting it.
    if (check) {
      try {
        check();
      } catch (const Error&) {
        v = cell->value.load(std::memory_order_acquire);
        if (v >= target) return v;
        throw;
      }
    }
    if (deadline.expired()) throwTimeout(deadline, what(), peer);
  }
}

void waitUntil(const std::function<bool()>& ready, const Deadline& deadline,
               const std::function<std::string()>& what, const std::function<void()>& check) {
  Backoff backoff;
  uint32_t polls = 0;
  while (!ready()) {
    backoff.pause();
    if ((++polls & 63) == 0) {  // about every 13 ms of naps: see p2p_group.cpp
      if (check) {
        try {
          check();
        } catch (const Error&) {
          if (ready()) return;  // the peer finished its part just before it went away
          throw;
        }
      }
      if (deadline.expired()) throwTimeout(deadline, what());
    }
  }
}

}  // namespace ctran
