// The GPU side of DeviceRma: the put copy, the put that signals, and the signal / wait kernels
// (one thread each).
#include <algorithm>
#include <cstdint>

#include "ctran/copy_device.cuh"
#include "ctran/gpu_runtime.hpp"
#include "ctran/signal_device.cuh"
#include "device/device_rma_kernels.hpp"

namespace ctran::device {
namespace {

constexpr int kPutThreads = 512;
// Below this many bytes per block a launch is all start-up; above it more blocks hide latency.
constexpr size_t kPutBytesPerBlock = size_t{32} << 10;
// Blocks per SM a large put may use: enough resident warps to keep the memory system busy.
constexpr int kPutBlocksPerSm = 4;

__global__ void rmaPutSignalKernel(char* dst, const char* src, size_t bytes,
                                   RmaSignalTarget target) {
  copyShare(dst, src, bytes, blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
            static_cast<size_t>(gridDim.x) * blockDim.x);
  __syncthreads();
  if (threadIdx.x != 0) return;
  // One block: the barrier orders its stores before the release, which is cumulative (the
  // producer pattern of signal_device.cuh). Several: the grid barrier's pattern, one thread per
  // block fences at system scope (covering the block's stores the barrier ordered before it) and
  // counts the block in; the last block in has seen every block's count, so its release covers
  // every block's stores.
  if (gridDim.x > 1) {
    __threadfence_system();
    if (atomicAdd(target.arrivals, 1u) != gridDim.x - 1) return;
    __threadfence_system();
    *target.arrivals = 0;  // the next put on this stream starts after this kernel ended
  }
  const uint64_t next = *target.sent + 1;
  *target.sent = next;
  signalRelease(target.slot, next);
}

__global__ void rmaSignalKernel(uint64_t* slot, uint64_t* sent) {
  const uint64_t next = *sent + 1;
  *sent = next;
  // The copies of earlier puts finished before this kernel started (stream order); the fence
  // makes them, and this kernel's own stores, visible system-wide before the flag.
  __threadfence_system();
  signalRelease(slot, next);
}

__global__ void rmaWaitKernel(RmaWaitList list, ctran::WaitBound bound) {
  for (int p = 0; p < list.nranks; ++p) {
    if (list.counts[p] == 0) continue;
    const uint64_t target = list.expected[p] + list.counts[p];
    list.expected[p] = target;
    // The window's own report: a wait past its timeout records itself there and ends (no
    // trap), and its abort word ends every later wait of the window at once (the next peers'
    // of this kernel too).
    signalWait(list.slots + p, target, list.rank, p, bound, "a window signal");
  }
}

}  // namespace

void rmaCopy(int dev, void* dst, const void* src, size_t bytes, void* stream) {
  GpuDeviceGuard guard(dev, "window put");
  CTRAN_GPU_CHECK(
      gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, static_cast<gpuStream_t>(stream)),
      "window put: copying ", bytes, " bytes on GPU ", dev);
}

void rmaPutSignal(int dev, void* dst, const void* src, size_t bytes, const RmaSignalTarget& target,
                  void* stream) {
  GpuDeviceGuard guard(dev, "window put");
  int sms = 1;
  CTRAN_GPU_CHECK(gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, dev),
                  "window put: the SM count of GPU ", dev);
  const size_t wanted = (bytes + kPutBytesPerBlock - 1) / kPutBytesPerBlock;
  const size_t most = static_cast<size_t>(std::max(sms, 1)) * kPutBlocksPerSm;
  const int blocks = static_cast<int>(std::clamp<size_t>(wanted, 1, most));
  rmaPutSignalKernel<<<blocks, kPutThreads, 0, static_cast<gpuStream_t>(stream)>>>(
      static_cast<char*>(dst), static_cast<const char*>(src), bytes, target);
  CTRAN_GPU_CHECK(gpuGetLastError(), "window put: launching a copy of ", bytes, " bytes on GPU ",
                  dev);
}

void rmaSignal(int dev, uint64_t* slot, uint64_t* sent, void* stream) {
  GpuDeviceGuard guard(dev, "window signal");
  rmaSignalKernel<<<1, 1, 0, static_cast<gpuStream_t>(stream)>>>(slot, sent);
  CTRAN_GPU_CHECK(gpuGetLastError(), "window signal: launching on GPU ", dev);
}

void rmaWait(int dev, const RmaWaitList& list, const WaitBound& bound, void* stream) {
  GpuDeviceGuard guard(dev, "window wait_signal");
  rmaWaitKernel<<<1, 1, 0, static_cast<gpuStream_t>(stream)>>>(list, bound);
  CTRAN_GPU_CHECK(gpuGetLastError(), "window wait_signal: launching on GPU ", dev);
}

}  // namespace ctran::device
