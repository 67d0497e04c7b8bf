// A copy done by a kernel's threads, for kernels that copy as part of a larger step (a put that
// signals, a host proxy's staging). Include from GPU translation units only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/gpu_runtime.hpp"

namespace ctran::device {

/// Loads in flight per thread before their stores.
constexpr int kCopyUnroll = 4;

/// The thread `first` of `stride` threads (a block's: threadIdx.x, blockDim.x; a grid's: the
/// global index and size) copies its share of `n` bytes: 16-byte words when both ends are
/// 16-byte aligned, bytes for the rest.
__device__ __forceinline__ void copyShare(char* dst, const char* src, size_t n, size_t first,
                                          size_t stride) {
  size_t whole = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15u) == 0) {
    const size_t words = n / 16;
    auto* d = reinterpret_cast<uint4*>(dst);
    const auto* s = reinterpret_cast<const uint4*>(src);
    size_t i = first;
    for (; i + (kCopyUnroll - 1) * stride < words; i += kCopyUnroll * stride) {
      uint4 v[kCopyUnroll];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) v[u] = s[i + u * stride];
#pragma unroll
      for (int u = 0; u < kCopyUnroll; ++u) d[i + u * stride] = v[u];
    }
    for (; i < words; i += stride) d[i] = s[i];
    whole = words * 16;
  }
  for (size_t i = whole + first; i < n; i += stride) dst[i] = src[i];
}

}  // namespace ctran::device
