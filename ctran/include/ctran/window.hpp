// Registered memory windows: memory every rank of a PeerGroup allocates collectively, which
// peers reach directly (a mapped pointer, for ranks on one host) or by put / signal (tcp).
//
// Memory model. A window has `numSignals` 64-bit signal slots. signal(peer, slot, d) adds d to
// the peer's slot with release semantics after all earlier puts from this rank to that peer;
// waitSignal(slot, v) returns once the local slot is >= v, with acquire semantics. So data put
// (or stored through a direct pointer) before a signal is visible to the peer after its wait.
// Slots only grow: use them as sequence numbers, never reset them while peers may signal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ctran/transport.hpp"

namespace ctran {

class PeerGroup;
class ShmSegment;

class Window {
 public:
  ~Window();
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;

  uint64_t id() const { return local_.id; }
  size_t bytes() const { return local_.bytes; }
  int numSignals() const { return local_.numSignals; }
  /// This rank's bytes (16-byte aligned).
  void* data() const;
  /// `peer`'s bytes mapped here, or nullptr when the peer is reachable only by put.
  void* peerData(int peer) const;
  /// `peer`'s signal slots mapped here, or nullptr.
  SignalCell* peerSignals(int peer) const;
  /// This rank's signal slots.
  SignalCell* signals() const;

  /// Copies bytes into `peer`'s window at `offset`; checks bounds.
  void put(int peer, size_t offset, const void* src, size_t bytes);
  /// Adds `delta` to `peer`'s signal `slot` (release; see the memory model above).
  void signal(int peer, int slot, uint64_t delta = 1);
  /// Waits until the local `slot` reaches `value`; `fromPeer` names the rank expected to signal
  /// it (its death or the deadline turns the wait into an error naming it). The deadline is
  /// `timeoutMs` from now, or RCCLX_TIMEOUT_MS when it is negative.
  uint64_t waitSignal(int slot, uint64_t value, int fromPeer, int64_t timeoutMs = -1);
  /// Reads the local `slot` (acquire).
  uint64_t readSignal(int slot) const;

  /// Unmaps peers and releases the memory (local, not collective). A second call throws.
  void destroy();
  bool destroyed() const { return destroyed_; }

 private:
  friend class PeerGroup;
  Window(PeerGroup& group, size_t bytes, int numSignals);
  void checkUsable(const char* what) const;
  void checkSlot(int slot, const char* what) const;
  /// Called when a put or signal to `peer` failed: raises the group's failure, or reports
  /// `peer`'s and raises it; returns when neither applies (the caller rethrows its error).
  void raiseAsGroup(int peer);

  PeerGroup* group_;
  std::unique_ptr<ShmSegment> segment_;
  LocalWindow local_;
  std::vector<std::unique_ptr<PeerWindow>> peers_;  // by rank; null for self
  bool destroyed_ = false;
};

}  // namespace ctran
