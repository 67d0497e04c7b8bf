// DirectArena: staging memory that every rank of one host maps, for algorithms that load
// peers' data directly (DDA). Two slots alternate, so one step's readers never race the next
// step's writer; each slot holds an input region and a result region of slotBytes() each.
//
// Step protocol (all ranks, same order):
//   s = beginStep(tag, bytes)     waits until peers finished reading this slot two steps ago
//   ... write input(s) ...
//   publish(0, s); waitPeers(0, s)  every rank's input of step s is readable (acquire)
//   ... optionally write result(s); publish(1, s); waitPeers(1, s) ...
//   endStep(s)                      tells every peer this rank is done reading their slot
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ctran/peer_group.hpp"
#include "ctran/window.hpp"

namespace rcclx {

class DirectArena {
 public:
  /// Collective over `group`, whose ranks must all share this host (shm transport).
  /// `timeoutMs`: the deadline of every wait (RCCLX_TIMEOUT_MS, read at communicator creation).
  DirectArena(ctran::PeerGroup& group, size_t slotBytes, int64_t timeoutMs);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  size_t slotBytes() const { return slotBytes_; }

  /// Starts a step carrying `bytes` of operation `tag`; returns its number.
  uint64_t beginStep(uint64_t tag, size_t bytes);
  char* input(uint64_t step) { return region(rank_, step, 0); }
  char* result(uint64_t step) { return region(rank_, step, 1); }
  const char* peerInput(int peer, uint64_t step) { return region(peer, step, 0); }
  const char* peerResult(int peer, uint64_t step) { return region(peer, step, 1); }
  /// Marks this rank's phase-`phase` data of `step` as written (release).
  void publish(int phase, uint64_t step);
  /// Waits until every peer published `phase` of `step` (acquire), and checks that each
  /// peer's step carries the same tag and byte count as this rank's.
  void waitPeers(int phase, uint64_t step);
  /// Ends this rank's reads of `step`.
  void endStep(uint64_t step);

  void destroy();

 private:
  int64_t timeoutMs_;
  struct alignas(64) StepHeader {
    uint64_t tag;
    uint64_t bytes;
  };
  static constexpr int kSlots = 2;
  static constexpr int kReady0 = 0;
  static constexpr int kReady1 = 1;
  static constexpr int kConsumed = 2;

  char* slotBase(int peer, uint64_t step);
  char* region(int peer, uint64_t step, int which) {
    return slotBase(peer, step) + sizeof(StepHeader) + which * slotBytes_;
  }
  /// Waits until *cell reaches value: a cell that `peer` raises, or with peer -1 one that every
  /// peer raises.
  void waitOn(ctran::SignalCell* cell, uint64_t value, int peer, const char* what);
  int furthestBehind() const;

  ctran::PeerGroup& group_;
  int rank_;
  int nranks_;
  size_t slotBytes_;
  std::shared_ptr<ctran::Window> window_;
  std::vector<char*> bases_;                 // every rank's window data, mapped here
  std::vector<ctran::SignalCell*> signals_;  // every rank's signal cells, mapped here
  uint64_t step_ = 0;
};

}  // namespace rcclx
