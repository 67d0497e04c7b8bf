// The host proxy's step kernel (host_proxy.hpp): a call's copies to and from its staging around
// its host parts, in stream order.
#include <cstdint>

#include "ctran/copy_device.cuh"
#include "ctran/signal_device.cuh"
#include "device/host_proxy.hpp"

namespace rcclx::gpu {
namespace {

// One block copies over the bus (the staging is mapped host memory): reading it back is bound by
// the loads in flight, kCopyThreads * kCopyUnroll 16-byte words
// (docs/measurements/2026-12-06_one_launch_proxy_step.md).
constexpr int kCopyThreads = 1024;

static_assert(sizeof(ProxyStep) + sizeof(ctran::WaitBound) <= 4096,
              "a step kernel's arguments fit the launch's 4 KiB");

__device__ uint64_t epochOf(const ProxyStep::Part& part) {
  return part.replay != nullptr ? ctran::device::signalAcquire(part.replay) : part.epoch;
}

// A copy's bytes; the prefix copy's are read from the word the host part wrote (after the wait
// of its part).
__device__ size_t bytesOf(const ProxyStep& step, int c) {
  size_t n = step.copy[c].bytes;
  if (c == step.prefixCopy) {
    const uint64_t want = *reinterpret_cast<const volatile uint64_t*>(step.copyBackBytes);
    if (want < n) n = static_cast<size_t>(want);
  }
  return n;
}

// Every store into the staging is fenced at system scope before the "staged" word's release, so
// the executor that acquires the word reads them all; the copies back read the staging only
// after the block acquired the "done" word (thread 0, then the barrier).
__global__ void __launch_bounds__(kCopyThreads)
    proxyStepKernel(ProxyStep step, ctran::WaitBound bound) {
  __shared__ bool live;  // no wait of this block was aborted
  if (threadIdx.x == 0) live = true;
  for (int i = 0; i < step.parts; ++i) {
    const ProxyStep::Part& part = step.part[i];
    __syncthreads();  // `live` is set; the previous part's copies are done
    if (part.done != nullptr) {
      if (threadIdx.x == 0 && live) {
        const uint64_t epoch = epochOf(part);
        ctran::device::signalWait(part.done, epoch, step.rank, step.rank, bound,
                                  "the host part of its call");
        live = ctran::device::signalAcquire(part.done) >= epoch;
      }
      __syncthreads();
      if (!live) continue;  // aborted: the outputs in flight are undefined
    }
    for (int c = part.firstCopy; c < part.firstCopy + part.copies; ++c) {
      ctran::device::copyShare(static_cast<char*>(step.copy[c].dst),
                               static_cast<const char*>(step.copy[c].src), bytesOf(step, c),
                               threadIdx.x, blockDim.x);
    }
    if (part.staged == nullptr) continue;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      ctran::device::signalRelease(part.staged, epochOf(part));
    }
  }
  if (step.finished == 0) return;
  __syncthreads();  // every thread's reads of the staging are done
  if (threadIdx.x != 0) return;
  for (int f = 0; f < step.finished; ++f) {
    ctran::device::signalRelease(step.finish[f].word, step.finish[f].epoch);
  }
}

}  // namespace

void launchProxyStep(const ProxyStep& step, const ctran::WaitBound& bound, void* stream) {
  const int threads = step.copies > 0 ? kCopyThreads : ctran::kWarpSize;
  proxyStepKernel<<<1, threads, 0, static_cast<gpuStream_t>(stream)>>>(step, bound);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the stream step of a call across hosts");
}

}  // namespace rcclx::gpu
