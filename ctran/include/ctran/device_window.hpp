// DeviceWindow: device memory that every rank of a one-host PeerGroup allocates collectively
// and maps from all its peers (CUDA IPC over NVLink / PCIe), handed to kernels as a small
// trivially-copyable DeviceWindowHandle.
//
// Each rank's allocation holds three areas:
//   epochs  - kMaxEpochSlots 32-bit sequence numbers, local only (see signal_device.cuh): a
//             kernel reads its epoch from device memory and bumps it before it ends, so a
//             captured CUDA graph replays with fresh sequence numbers;
//   signals - numSignals 64-bit flags that peers write (release) and the owner polls (acquire);
//   data    - dataBytes of staging memory that peers store into and load from.
// Everything starts zeroed. Peers' areas are reached through handle().data[r] / signals[r].
//
// A window may instead be made over memory the caller already has (DeviceWindow::UserMemory, a
// range inside one cudaMalloc allocation, e.g. a torch tensor's): no epochs, no signals, the
// data area is that range, and destroy() frees nothing.
//
// Lifetime: the constructor is collective (every rank passes the same sizes); it allocates,
// exchanges IPC handles through the group's bootstrap and opens the peers' handles (ranks of
// the same process, told apart by pid and process token, are reached by plain pointers with
// peer access enabled: one process may drive several GPUs). destroy(true) is collective: it
// waits for this device, meets every rank at a barrier, then closes the mappings it opened and
// frees; destroy(false) (abort) skips the barrier. Kernels using the window must be ordered on
// one stream (or otherwise serialised) per rank, as NCCL requires of a communicator. Every
// runtime call runs with `device` current and leaves the caller's current device as it was.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <vector>

#include "ctran/store.hpp"
#include "ctran/wait_report.hpp"  // the bound of the waits of kernels using a window

namespace ctran {

class PeerGroup;

/// Ranks a DeviceWindow (and the kernels using it) supports.
constexpr int kMaxDeviceRanks = 8;
/// Thread blocks of one kernel that may each keep an epoch (a kernel's grid must not exceed it).
constexpr int kMaxEpochSlots = 256;

/// What a kernel needs to reach a DeviceWindow: plain pointers, valid in this process.
struct DeviceWindowHandle {
  int rank = 0;
  int nranks = 0;
  size_t dataBytes = 0;
  int numSignals = 0;
  char* data[kMaxDeviceRanks] = {};         ///< rank r's data area mapped here (own at [rank])
  uint64_t* signals[kMaxDeviceRanks] = {};  ///< rank r's signal flags mapped here
  uint32_t* epochs = nullptr;               ///< this rank's epoch counters (kMaxEpochSlots)
};

class DeviceWindow {
 public:
  /// Collective over `group`, whose ranks must all be on this host (at most kMaxDeviceRanks):
  /// allocates on GPU `device` and maps every peer's allocation. Throws CudaError (with the
  /// runtime's message and the sizes) when allocation, export or mapping fails, and
  /// InvalidArgument for bad sizes, more than kMaxDeviceRanks ranks, or ranks on other hosts.
  DeviceWindow(PeerGroup& group, int device, size_t dataBytes, int numSignals);
  /// A range of this rank's device memory, inside one allocation, that the caller owns.
  struct UserMemory {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  /// Collective: maps `memory` (on GPU `device`) on every peer, as the data area of a window
  /// with no epochs or signals; every rank passes the same size. Throws InvalidArgument for a
  /// range that is not device memory of `device` inside one allocation with an IPC handle,
  /// CudaError when the runtime fails to export or map it; any rank's failure fails every rank.
  DeviceWindow(PeerGroup& group, int device, UserMemory memory);
  ~DeviceWindow();
  DeviceWindow(const DeviceWindow&) = delete;
  DeviceWindow& operator=(const DeviceWindow&) = delete;

  /// Pointers for kernels (valid until destroy()).
  const DeviceWindowHandle& handle() const { return handle_; }
  int device() const { return device_; }
  /// Bytes of device memory this rank allocated (all three areas; 0 over user memory).
  size_t allocatedBytes() const { return allocBytes_; }

  /// Releases the mappings and the memory. `collective`: first synchronises this device and
  /// meets every rank at a barrier, so no peer still uses this rank's memory. A second call
  /// throws InvalidUsage.
  void destroy(bool collective = true);
  bool destroyed() const { return destroyed_; }

 private:
  /// Checks the group and the sizes every constructor shares.
  void checkGroup(size_t dataBytes, int numSignals) const;
  /// The collective part of construction: every rank contributes its export `record` (or its
  /// `failure`, a ctran::Error), then maps every peer's. Returns each rank's memory as mapped here
  /// (own: `mine`). Throws, after releasing, when any rank failed.
  std::vector<char*> mapPeers(char* mine, const Bytes& record, std::exception_ptr failure,
                              size_t expectBytes);
  void release();

  PeerGroup* group_;
  int device_;
  size_t allocBytes_ = 0;
  void* base_ = nullptr;         // this rank's allocation
  std::vector<void*> imported_;  // by rank: the mapped base of an IPC-opened peer, or null
  DeviceWindowHandle handle_;
  bool destroyed_ = false;
};

/// Byte offsets of the three areas inside every rank's allocation (the same on all ranks).
struct DeviceWindowLayout {
  size_t epochsOffset = 0;
  size_t signalsOffset = 0;
  size_t dataOffset = 0;
  size_t totalBytes = 0;
  /// The layout for `dataBytes` of data and `numSignals` flags (each area 256-byte aligned).
  static DeviceWindowLayout of(size_t dataBytes, int numSignals);
};

}  // namespace ctran
