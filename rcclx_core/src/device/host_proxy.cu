// The host proxy's two kernels (host_proxy.hpp): the wait for a call's host part, and the copy
// back whose size the host part decided.
#include <algorithm>
#include <cstdint>

#include "ctran/signal_device.cuh"
#include "device/host_proxy.hpp"

namespace rcclx::gpu {
namespace {

constexpr int kCopyThreads = 256;
constexpr int kMaxCopyBlocks = 1024;

__global__ void waitForHostKernel(const uint64_t* done, uint64_t epoch, int rank,
                                  ctran::WaitBound bound) {
  ctran::device::signalWait(done, epoch, rank, rank, bound, "the host part of its call");
}

// Reads the staging over the bus (mapped host memory): 16-byte loads where both ends allow.
__global__ void copyPrefixKernel(char* dst, const char* src, const uint64_t* bytes,
                                 size_t maxBytes) {
  const uint64_t want = *reinterpret_cast<const volatile uint64_t*>(bytes);
  const size_t n = want < maxBytes ? static_cast<size_t>(want) : maxBytes;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  size_t vectors = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15u) == 0) {
    vectors = n / 16;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (size_t i = first; i < vectors; i += stride) d[i] = s[i];
  }
  for (size_t i = vectors * 16 + first; i < n; i += stride) dst[i] = src[i];
}

}  // namespace

void launchWaitForHost(const uint64_t* done, uint64_t epoch, int rank,
                       const ctran::WaitBound& bound, void* stream) {
  waitForHostKernel<<<1, 1, 0, static_cast<gpuStream_t>(stream)>>>(done, epoch, rank, bound);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the wait for a call's host part");
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
