// The GPU side of DeviceRma: the put copy and the signal / wait kernels (one thread each).
#include "ctran/gpu_runtime.hpp"
#include "ctran/signal_device.cuh"
#include "device/device_rma_kernels.hpp"

namespace ctran::device {
namespace {

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
