// One-sided calls on host windows (ncclPutSignal, ncclSignal, ncclWaitSignal): how a put reaches
// the memory a peer registered, which ctran cannot map (it is the caller's, not a ctran
// window's).
//
// Each host window has a mirror: a ctran window of the same size on every rank, which peers
// reach through the communicator's transports (shared memory on a host, tcp or ucx between
// hosts). The communicator has one channel: a ctran window holding, for every ordered pair of
// ranks, a ring of kRecords records and two signal slots. A put copies the data into the
// peer's mirror at its offset, writes a record (window, offset, bytes) into its ring at the
// peer and signals the peer's slot for this rank; ncclSignal writes a record of no bytes. A
// wait for n signals from a peer waits for its slot, then applies that peer's records in order
// (copies each range from the mirror into the registered memory) and returns the ring space to
// the peer. So the data of a put is in the peer's window when the peer's wait for its signal
// returns, as NCCL guarantees, and not earlier; a rank sending more than kRecords signals
// ahead of the peer's waits blocks until the peer waits (a dead peer or RCCLX_TIMEOUT_MS turns
// that into an error).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "rcclx/communicator.hpp"

namespace rcclx::nccl {

class Rma {
 public:
  /// Records a rank may send ahead of the peer's waits.
  static constexpr uint64_t kRecords = 1024;

  /// Collective: the channel over `core`'s ranks.
  explicit Rma(rcclx::Communicator& core);

  /// Collective (every rank registers a window of the same size): the mirror of `bytes` of
  /// host memory at `base`; returns the window's number, the same on every rank.
  uint32_t addWindow(rcclx::Communicator& core, void* base, size_t bytes);
  /// Local: forgets window `index` (records naming it are skipped).
  void removeWindow(uint32_t index);

  /// `bytes` from `src` into `peer`'s window `index` at `offset`, then a signal.
  void put(int peer, uint32_t index, size_t offset, const void* src, size_t bytes);
  /// A signal to `peer` without data.
  void signal(int peer);
  /// Waits for `count` more signals from `peer`, applying their puts.
  void wait(int peer, uint64_t count);

  /// Local: releases the channel and every mirror (before the core communicator goes).
  void destroy();

 private:
  struct Record {
    uint64_t window;  ///< kNoWindow for a signal without data
    uint64_t offset;
    uint64_t bytes;
  };
  static constexpr uint64_t kNoWindow = ~uint64_t{0};
  struct Mirror {
    void* user = nullptr;
    size_t bytes = 0;
    std::shared_ptr<ctran::Window> window;
  };

  void send(int peer, const Record& record);
  size_t ringOffset(int sender, uint64_t seq) const;

  int rank_;
  int nranks_;
  std::shared_ptr<ctran::Window> channel_;  // slot p: signals from p; nranks_ + p: p's credits
  std::vector<uint64_t> sent_;              // by peer: signals sent
  std::vector<uint64_t> applied_;           // by peer: signals waited for and applied
  std::map<uint32_t, Mirror> mirrors_;
  uint32_t nextWindow_ = 0;
};

}  // namespace rcclx::nccl
