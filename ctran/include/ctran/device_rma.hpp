// DeviceRma: one-sided puts and stream-ordered signals between the ranks of a one-host
// PeerGroup, over device memory each rank already has (a torch tensor's), which every rank maps
// (a DeviceWindow over user memory: CUDA IPC, or plain pointers between ranks of one process).
//
// Memory model.
//  * put(peer, offset, src, bytes, stream) enqueues a copy from this rank's device memory into
//    the peer's memory at `offset`.
//  * signal(peer, stream) enqueues a one-thread kernel that runs after everything before it on
//    the stream (the copies of earlier puts complete first: stream order), fences at system
//    scope and stores this rank's next sequence number for `peer` into this rank's slot of the
//    peer's signal array with a system-scope release.
//  * waitSignal(peer, stream) enqueues a one-thread kernel that polls the local slot of `peer`
//    (system-scope acquire) until it reaches the next expected number; work enqueued after it
//    on the stream sees every put the peer enqueued before the matching signal. The host does
//    not block.
//  * The n-th wait for a peer matches that peer's n-th signal to this rank. Both counters (sent
//    and expected, per peer) live in device memory and are advanced by the kernels, so a
//    captured CUDA graph replays with fresh sequence numbers. Calls of one DeviceRma must be
//    ordered on the device (one stream, or events between streams).
//
// Failure. Waits are bounded by a wait report of the window's own (MappedWaitReport: pinned
// host memory mapped into the GPU). A wait past its timeout prints what it waited for, records
// it in the report and sets the report's abort word; its kernel returns (it never traps, so
// the GPU context stays usable, also for the other processes of an MPS server) and every later
// wait of the window ends at once, so the stream never stalls on the window again. From then
// on the window is failed: every call but destroy() throws a TimeoutError naming this rank,
// the peer, the signal expected and the one seen, and the timeout; destroy() works as before.
// The host learns of the timeout without blocking, once the kernel has recorded it: calls
// enqueued before then stay enqueued (their waits end at once, what they deliver is undefined).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ctran/device_window.hpp"
#include "ctran/wait_report.hpp"

namespace ctran {

class PeerGroup;

class DeviceRma {
 public:
  /// Collective over `group` (every rank on this host, at most kMaxDeviceRanks): maps `memory`
  /// (this rank's, on GPU `device`; the same size on every rank) on every peer and allocates the
  /// signal slots and the wait report. Throws what DeviceWindow throws: CudaError in a build
  /// without GPU code or when the runtime fails, InvalidArgument for memory that cannot be
  /// mapped or bad sizes.
  DeviceRma(PeerGroup& group, int device, DeviceWindow::UserMemory memory);
  ~DeviceRma();
  DeviceRma(const DeviceRma&) = delete;
  DeviceRma& operator=(const DeviceRma&) = delete;

  /// Bytes of each rank's memory.
  size_t bytes() const { return memory_.handle().dataBytes; }
  int device() const { return memory_.device(); }
  /// `peer`'s memory as mapped in this process (this rank's own for peer == rank).
  void* peerData(int peer) const;

  /// Enqueues on `stream` a copy of `bytes` from `src` (device memory) into `peer`'s memory at
  /// `offset`; checks the bounds.
  void put(int peer, size_t offset, const void* src, size_t bytes, void* stream);
  /// Enqueues on `stream` this rank's next signal to `peer` (release; see the memory model).
  void signal(int peer, void* stream);
  /// Enqueues on `stream` a wait for `peer`'s next signal (acquire); the kernel gives up after
  /// `timeoutMs` (RCCLX_TIMEOUT_MS when negative) and the window fails (see Failure above).
  void waitSignal(int peer, void* stream, int64_t timeoutMs = -1);

  /// Throws the window's TimeoutError once one of its waits has timed out (see Failure above);
  /// returns otherwise. Reads host memory only: it neither blocks nor synchronises, so it sees
  /// a timeout only once the waiting kernel has recorded it. InvalidUsage after destroy().
  void checkFailed() const;

  /// Releases the mappings, the signal slots and the wait report; `collective`: first finishes
  /// this GPU's work and meets every rank (no peer still writes here); otherwise first ends
  /// this window's pending waits. A failed window is destroyed the same way. A second call
  /// throws InvalidUsage.
  void destroy(bool collective = true);
  bool destroyed() const { return destroyed_; }

 private:
  /// Throws InvalidUsage after destroy(), then the window's TimeoutError (`what` names the call).
  void checkLive(const char* what) const;
  /// checkLive, then checks `peer`.
  void checkUsable(const char* what, int peer) const;

  PeerGroup* group_;
  DeviceWindow memory_;   // the caller's memory, mapped by every rank
  DeviceWindow signals_;  // signals[r]: slot p counts p's signals to r; data: this rank's counters
  std::unique_ptr<MappedWaitReport> waits_;  // bounds this window's waits; null once destroyed
  bool destroyed_ = false;
};

}  // namespace ctran
