// The host proxy's state (host_proxy.hpp) that its eager calls (host_proxy.cpp) and its captured
// ones (host_proxy_graph.cpp) share: a slot, the pinned memory mapped into the GPU that holds one
// call's words and staging; a captured call; the channel graph replays run on.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/peer_group.hpp"
#include "ctran/wait.hpp"
#include "device/host_proxy.hpp"
#include "host/host_backend.hpp"

namespace rcclx::gpu {

// Host reductions vectorise best on aligned blocks; the words take the slot's first block.
constexpr size_t kRegionAlign = 256;

// Staging is allocated in powers of two from this size, so a slot serves calls of similar sizes
// without reallocating.
constexpr size_t kMinStagingBytes = size_t{64} << 10;

// How often (in microseconds of waiting) a wait for a slot's finished word asks the device
// whether it failed.
constexpr int64_t kDeviceCheckUs = 10000;

inline size_t stagingSize(size_t bytes) {
  size_t size = kMinStagingBytes;
  while (size < bytes) size *= 2;
  return size;
}

/// What the stream and the executor hand each other, at the head of a slot's mapped memory.
struct ProxyWords {
  uint64_t staged;         ///< the epoch of the last call whose inputs are in the staging
  uint64_t done;           ///< the epoch of the last call whose host part finished
  uint64_t copyBackBytes;  ///< the bytes of a data-dependent copy back (copyBackPrefix)
  uint64_t replay;         ///< a captured call's replay number, for its step kernel
  /// The epoch of the last eager call whose last step kernel copied its outputs back (or was
  /// aborted): its stream work no longer reads the staging.
  uint64_t finished;
};
static_assert(sizeof(ProxyWords) <= kRegionAlign, "the words fit the slot's first block");

struct HostProxy::Slot {
  int device = 0;
  gpuEvent_t deviceProbe = nullptr;  ///< the proxy's (waitReleased)
  char* host = nullptr;              ///< pinned, mapped: ProxyWords, then the staging
  char* mapped = nullptr;            ///< the same memory as the GPU addresses it
  size_t capacity = 0;               ///< staging bytes
  uint64_t epoch = 0;                ///< calls run in this slot
  gpuEvent_t released = nullptr;     ///< recorded after the stream work of a call that failed
  bool inUse = false;                ///< the last call's stream work may not have completed
  /// The last call's step kernel was launched and stores its epoch in `finished` when done with
  /// the staging: a load tells whether the slot is free, and nothing is recorded on the stream
  /// (recording an event costs the caller half a microsecond, querying one over one). Otherwise
  /// `released` tells.
  bool finishedWord = false;
  bool reserved = false;  ///< taken by a call being enqueued (acquire to hold)

  ProxyWords* words() const { return reinterpret_cast<ProxyWords*>(host); }
  ProxyWords* mappedWords() const { return reinterpret_cast<ProxyWords*>(mapped); }
  char* staging() const { return host + kRegionAlign; }
  char* mappedStaging() const { return mapped + kRegionAlign; }

  /// Notes whether the stream work of the slot's last call has completed (no wait).
  bool pollReleased() {
    if (!inUse) return true;
    if (finishedWord) {
      if (__atomic_load_n(&words()->finished, __ATOMIC_ACQUIRE) < epoch) return false;
      inUse = false;
      return true;
    }
    const gpuError_t state = gpuEventQuery(released);
    if (state == gpuErrorNotReady) return false;
    CTRAN_GPU_CHECK(state, "the copies back of a call across hosts (GPU ", device, ")");
    inUse = false;
    return true;
  }

  /// Waits for the copies back of the slot's last call. The step kernel's waits are bounded, so
  /// only a failed device keeps the finished word from coming: a query of `deviceProbe` (never
  /// recorded) every few milliseconds raises its error.
  void waitReleased() {
    if (!inUse) return;
    if (finishedWord) {
      ctran::Backoff backoff;
      int64_t checkedAtUs = 0;
      while (__atomic_load_n(&words()->finished, __ATOMIC_ACQUIRE) < epoch) {
        backoff.pause();
        if (backoff.waitedUs() - checkedAtUs < kDeviceCheckUs) continue;
        checkedAtUs = backoff.waitedUs();
        CTRAN_GPU_CHECK(gpuEventQuery(deviceProbe), "the copies back of a call across hosts (GPU ",
                        device, ")");
      }
    } else {
      CTRAN_GPU_CHECK(gpuEventSynchronize(released), "the copies back of a call across hosts (GPU ",
                      device, ")");
    }
    inUse = false;
  }

  /// Room for `bytes` of staging (the slot is free).
  void reserve(size_t bytes) {
    if (bytes <= capacity && host != nullptr) return;
    freeMemory();
    const size_t grown = stagingSize(bytes);
    void* p = nullptr;
    CTRAN_GPU_CHECK(ctran::gpuHostAllocMapped(&p, kRegionAlign + grown), "pinned staging of ",
                    grown, " bytes for GPU collectives across hosts");
    host = static_cast<char*>(p);
    void* d = nullptr;
    CTRAN_GPU_CHECK(ctran::gpuHostDevicePointer(&d, p), "mapping the staging into GPU ", device);
    mapped = static_cast<char*>(d);
    capacity = grown;
    *words() = ProxyWords{0, 0, 0, 0, 0};  // epochs only grow: the new memory starts below them
  }

  /// Taken until the finished word reaches the epoch (the call's last step kernel was launched).
  void holdUntilFinished() {
    inUse = true;
    finishedWord = true;
  }

  /// Taken until `released`, recorded now on `stream`, completes (the call failed while it was
  /// enqueued: its kernels may not have been launched).
  void holdUntilEvent(gpuStream_t stream) {
    if (released == nullptr) {
      CTRAN_GPU_CHECK(gpuEventCreateWithFlags(&released, gpuEventDisableTiming),
                      "a staging event of GPU ", device);
    }
    CTRAN_GPU_CHECK(gpuEventRecord(released, stream), "a staging event of GPU ", device);
    inUse = true;
    finishedWord = false;
  }

  /// Executor side: the host part of `epoch` finished; the wait kernel may go on.
  void publish(uint64_t epoch, size_t copyBackBytes) {
    words()->copyBackBytes = copyBackBytes;
    __atomic_store_n(&words()->done, epoch, __ATOMIC_RELEASE);
  }

  void freeMemory() noexcept {
    if (host != nullptr && ctran::gpuHostFreeMapped(host) != gpuSuccess) (void)gpuGetLastError();
    host = mapped = nullptr;
    capacity = 0;
  }

  /// Frees everything without throwing, after the slot's stream work (destroy).
  void release() noexcept {
    try {
      waitReleased();
    } catch (...) {  // the device failed: nothing runs on it any more
      (void)gpuGetLastError();
    }
    inUse = false;
    freeMemory();
    if (released != nullptr && gpuEventDestroy(released) != gpuSuccess) (void)gpuGetLastError();
    released = nullptr;
  }
};

/// One captured call. The graph holds it (a graph user object) and its host node points at it;
/// the graph channel lists it until its graph is gone.
struct HostProxy::GraphStep {
  struct Piece {
    Slot slot;  ///< the graph's own words and staging; epoch counts replays
    HostPart hostPart;
    HostCopies at{nullptr, {}};
  };
  std::atomic<HostProxy*> proxy{nullptr};  ///< null once the communicator released its GPU state
  std::vector<Piece> pieces;
  CopyBackBytes prefixBytes;
  std::atomic<bool> gone{false};  ///< the graph and its instances were destroyed
  std::shared_ptr<std::atomic<bool>> anyGone;

  void release() noexcept {
    for (Piece& piece : pieces) piece.slot.release();
  }
};

struct HostProxy::GraphChannel {
  std::unique_ptr<ctran::PeerGroup> group;
  std::unique_ptr<HostBackend> host;
  std::mutex mu;  ///< replays may arrive on more than one of the runtime's threads
  std::vector<std::shared_ptr<GraphStep>> steps;
  std::shared_ptr<std::atomic<bool>> anyGone = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace rcclx::gpu
