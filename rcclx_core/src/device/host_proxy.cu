// The host proxy's two kernels (host_proxy.hpp): a call's stream step around its host part, and
// the copy back whose size the host part decided.
#include <algorithm>
#include <cstdint>

#include "ctran/copy_device.cuh"
#include "ctran/signal_device.cuh"
#include "device/host_proxy.hpp"

namespace rcclx::gpu {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kMaxCopyBlocks = 1024;

// One block. Its stores into the staging (mapped host memory) are fenced at system scope before
// the "staged" word is released, so the executor that acquires the word reads them all; the
// copies back read the staging only after the done word was acquired.
__global__ void proxyStepKernel(ProxyStep step, ctran::WaitBound bound) {
  for (int i = 0; i < step.inputs; ++i) {
    ctran::device::copyShare(static_cast<char*>(step.in[i].dst),
                             static_cast<const char*>(step.in[i].src), step.in[i].bytes,
                             threadIdx.x, blockDim.x);
  }
  __syncthreads();
  __shared__ bool published;
  if (threadIdx.x == 0) {
    const uint64_t epoch =
        step.replay != nullptr ? ctran::device::signalAcquire(step.replay) : step.epoch;
    if (step.staged != nullptr) {
      __threadfence_system();
      ctran::device::signalRelease(step.staged, epoch);
    }
    published = false;
    if (step.done != nullptr) {
      ctran::device::signalWait(step.done, epoch, step.rank, step.rank, bound,
                                "the host part of its call");
      published = ctran::device::signalAcquire(step.done) >= epoch;
    }
  }
  __syncthreads();
  // Unless released only or aborted (the outputs in flight are then undefined): the outputs.
  for (int i = 0; published && i < step.outputs; ++i) {
    size_t n = step.out[i].bytes;
    if (i == step.prefixOutput) {
      const uint64_t want = *reinterpret_cast<const volatile uint64_t*>(step.copyBackBytes);
      if (want < n) n = static_cast<size_t>(want);
    }
    ctran::device::copyShare(static_cast<char*>(step.out[i].dst),
                             static_cast<const char*>(step.out[i].src), n, threadIdx.x, blockDim.x);
  }
  if (step.finished == nullptr) return;
  __syncthreads();  // every thread's reads of the staging are done
  if (threadIdx.x == 0) ctran::device::signalRelease(step.finished, step.epoch);
}

// Reads the staging over the bus (mapped host memory).
__global__ void copyPrefixKernel(char* dst, const char* src, const uint64_t* bytes,
                                 size_t maxBytes) {
  const uint64_t want = *reinterpret_cast<const volatile uint64_t*>(bytes);
  const size_t n = want < maxBytes ? static_cast<size_t>(want) : maxBytes;
  ctran::device::copyShare(dst, src, n, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x,
                           static_cast<size_t>(gridDim.x) * blockDim.x);
}

}  // namespace

void launchProxyStep(const ProxyStep& step, const ctran::WaitBound& bound, void* stream) {
  const int threads = step.inputs + step.outputs > 0 ? kCopyThreads : 1;
  proxyStepKernel<<<1, threads, 0, static_cast<gpuStream_t>(stream)>>>(step, bound);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the stream step of a call across hosts");
}

void launchCopyPrefix(void* dst, const void* src, const uint64_t* bytes, size_t maxBytes,
                      void* stream) {
  const size_t perBlock = static_cast<size_t>(kCopyThreads) * 16;
  const size_t wanted = (maxBytes + perBlock - 1) / perBlock;
  const int blocks =
      static_cast<int>(std::max<size_t>(1, std::min<size_t>(kMaxCopyBlocks, wanted)));
  copyPrefixKernel<<<blocks, kCopyThreads, 0, static_cast<gpuStream_t>(stream)>>>(
      static_cast<char*>(dst), static_cast<const char*>(src), bytes, maxBytes);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the copy back of a call's received rows");
}

}  // namespace rcclx::gpu
