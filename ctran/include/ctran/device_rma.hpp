// DeviceRma: one-sided puts and stream-ordered signals between the ranks of a one-host
// PeerGroup, over device memory each rank already has (a torch tensor's), which every rank maps
// (a DeviceWindow over user memory: CUDA IPC, or plain pointers between ranks of one process).
// It may also be made of signals alone, its puts then going into other mapped windows of the
// group (a communicator's one set of signals for all its registered buffers).
//
// Memory model.
//  * put(peer, offset, src, bytes, stream) enqueues a copy from this rank's device memory into
//    the peer's memory at `offset` (or into the peer's part of another mapped window).
//  * putSignal(target, peer, ...) is a put and a signal in one kernel (see there).
//  * signal(peer, stream) enqueues a one-thread kernel that runs after everything before it on
//    the stream (the copies of earlier puts complete first: stream order), fences at system
//    scope and stores this rank's next sequence number for `peer` into this rank's slot of the
//    peer's signal array with a system-scope release.
//  * waitSignal(peer, stream) enqueues a one-thread kernel that polls the local slot of `peer`
//    (system-scope acquire) until it reaches the next expected number; work enqueued after it
//    on the stream sees every put the peer enqueued before the matching signal. The host does
//    not block. waitSignals() waits in one kernel for several signals from several peers.
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
#include <string>
#include <vector>

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
  /// Collective over `group`, as above, without memory of its own: the signals, for puts into
  /// other windows of the group (put(target, ...)). `name` names it in errors where the other
  /// constructor's say "window" ("window put: ...: the window failed, ...").
  DeviceRma(PeerGroup& group, int device, const char* name);
  ~DeviceRma();
  DeviceRma(const DeviceRma&) = delete;
  DeviceRma& operator=(const DeviceRma&) = delete;

  /// Bytes of each rank's memory (0 without memory of its own).
  size_t bytes() const { return memory_ ? memory_->handle().dataBytes : 0; }
  int device() const { return device_; }
  /// Device memory this rank allocated for the signals and counters (not the mapped memory).
  size_t allocatedBytes() const { return signals_.allocatedBytes(); }
  /// `peer`'s memory as mapped in this process (this rank's own for peer == rank);
  /// InvalidUsage without memory of its own.
  void* peerData(int peer) const;

  /// Enqueues on `stream` a copy of `bytes` from `src` (device memory) into `peer`'s memory at
  /// `offset`; checks the bounds. InvalidUsage without memory of its own.
  void put(int peer, size_t offset, const void* src, size_t bytes, void* stream);
  /// The same into `peer`'s part of `target`, another live window of this group mapped on this
  /// GPU (a signal after it covers it as any put); InvalidArgument for a window of another
  /// group or GPU, or a range past its data.
  void put(const DeviceWindow& target, int peer, size_t offset, const void* src, size_t bytes,
           void* stream);
  /// put(target, ...) then signal(peer, ...) in one kernel: the copy's blocks fence their stores
  /// and the last one releases the signal, with the same memory model as the two calls.
  void putSignal(const DeviceWindow& target, int peer, size_t offset, const void* src, size_t bytes,
                 void* stream);
  /// Enqueues on `stream` this rank's next signal to `peer` (release; see the memory model).
  void signal(int peer, void* stream);
  /// Enqueues on `stream` a wait for `peer`'s next signal (acquire); the kernel gives up after
  /// `timeoutMs` (RCCLX_TIMEOUT_MS when negative) and the window fails (see Failure above).
  void waitSignal(int peer, void* stream, int64_t timeoutMs = -1);
  /// Enqueues on `stream` one kernel that waits for counts[p] more signals from each rank p
  /// (one count per rank of the group; 0: none from p), in rank order, each wait bounded as
  /// waitSignal's. Enqueues nothing when every count is 0.
  void waitSignals(const std::vector<uint64_t>& counts, void* stream, int64_t timeoutMs = -1);

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
  /// InvalidUsage naming `what` without memory of its own.
  void checkMemory(const char* what) const;
  /// This rank's signal slot in `peer`'s signal array, as mapped here.
  uint64_t* signalSlot(int peer) const;
  /// Checks that `target` is a live window of this group on this GPU; returns its handle.
  const DeviceWindowHandle& targetHandle(const DeviceWindow& target) const;
  /// Checks the range, then enqueues the copy into `peer`'s data of `h` (the put's work), and
  /// with `signal` this rank's next signal to `peer` in the same kernel.
  void copy(const DeviceWindowHandle& h, int peer, size_t offset, const void* src, size_t bytes,
            bool signal, void* stream) const;

  PeerGroup* group_;
  int device_;
  std::string name_;                      // what the errors call it
  std::unique_ptr<DeviceWindow> memory_;  // the caller's memory, mapped by every rank (or none)
  DeviceWindow signals_;  // signals[r]: slot p counts p's signals to r; data: this rank's counters
  std::unique_ptr<MappedWaitReport> waits_;  // bounds this window's waits; null once destroyed
  bool destroyed_ = false;
};

}  // namespace ctran
