// The 128-byte line protocol of the line kernels (tree_lines.cu, flat_lines.cu): a line holds
// 15 payload words of 8 bytes and, in its last word, the call's epoch as the flag. The eight
// lanes of a warp that share a line store it with one 16-byte store each, in one instruction:
// over NVLink the 128 bytes then arrive whole, so a reader that loads the line the same way and
// sees the flag sees the line's data. That is a property of NVIDIA GPUs and NVLink, not of the
// PTX memory model; builds take the line kernels on NVIDIA only.
//
// A warp covers kLinesPerWarp lines per instruction (a line group) and works on kBatch groups at
// once, so their loads and polls are in flight together. Line regions are used by parity half
// (epoch % 2) and written by line kernels only: a stale word never equals a current flag.
#pragma once

#include "device/allreduce/kernel_common.cuh"

namespace rcclx::gpu::lines {

constexpr int kLanesPerLine = static_cast<int>(kLineBytes / 16);
constexpr int kLinesPerWarp = ctran::kWarpSize / kLanesPerLine;
/// Line groups a warp works on at once (fewer dependent steps per warp).
constexpr int kBatch = 4;

__device__ __forceinline__ bool warpAll(bool pred) {
#if RCCLX_GPU_HIP
  return __all(pred);
#else
  return __all_sync(0xffffffffu, pred);
#endif
}

__device__ __forceinline__ bool warpAny(bool pred) {
#if RCCLX_GPU_HIP
  return __any(pred);
#else
  return __any_sync(0xffffffffu, pred);
#endif
}

/// Asks for the line holding `p` to be brought into L2 (NVIDIA; AMD: nothing).
__device__ __forceinline__ void prefetchL2(const void* p) {
#if RCCLX_GPU_HIP
  (void)p;
#else
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#endif
}

__device__ __forceinline__ uint64_t asWord(uint2 v) {
  return (static_cast<uint64_t>(v.y) << 32) | v.x;
}
__device__ __forceinline__ uint2 fromWord(uint64_t w) {
  return make_uint2(static_cast<uint32_t>(w), static_cast<uint32_t>(w >> 32));
}

/// This lane's 16 bytes of a line (a peer's), as one warp-wide store.
__device__ __forceinline__ void lineStore(char* p, uint64_t lo, uint64_t hi) {
#if RCCLX_GPU_HIP
  volatile uint64_t* d = reinterpret_cast<volatile uint64_t*>(p);
  d[0] = lo;
  d[1] = hi;
#else
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
#endif
}

/// This lane's 16 bytes of a line in local memory, as one warp-wide load (bypassing L1).
__device__ __forceinline__ void lineLoad(const char* p, uint64_t& lo, uint64_t& hi) {
#if RCCLX_GPU_HIP
  const volatile uint64_t* s = reinterpret_cast<const volatile uint64_t*>(p);
  lo = s[0];
  hi = s[1];
#else
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(lo), "=l"(hi)
               : "l"(p)
               : "memory");
#endif
}

/// A thread's place in the protocol: which 16 bytes of which line of its warp's group it moves.
struct Lane {
  int piece;           ///< this lane's 16 bytes of its line
  bool flagLane;       ///< its second word is the flag
  size_t lineInGroup;  ///< its line within the warp's group
  size_t warp;         ///< the warp, grid-wide
  size_t nWarps;

  __device__ __forceinline__ Lane() {
    const int lane = static_cast<int>(threadIdx.x) % ctran::kWarpSize;
    piece = lane % kLanesPerLine;
    flagLane = piece == kLanesPerLine - 1;
    lineInGroup = static_cast<size_t>(lane / kLanesPerLine);
    warp = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / ctran::kWarpSize;
    nWarps = static_cast<size_t>(gridDim.x) * blockDim.x / ctran::kWarpSize;
  }

  /// First of this lane's payload words in `line` of a run of lines starting at word `base`
  /// (the flag lane has one payload word, the others two).
  __device__ __forceinline__ size_t wordOf(size_t base, size_t line) const {
    return base + line * kLinePayloadWords + 2 * static_cast<size_t>(piece);
  }

  /// Visits the warp's line groups of `lines` lines, kBatch groups at a time: fn(line, active)
  /// with this lane's line of each group and whether it exists.
  template <typename Fn>
  __device__ __forceinline__ void forBatches(size_t lines, Fn&& fn) const {
    for (size_t g0 = warp; g0 * kLinesPerWarp < lines; g0 += kBatch * nWarps) {
      size_t line[kBatch];
      bool active[kBatch];
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        line[i] = (g0 + i * nWarps) * kLinesPerWarp + lineInGroup;
        active[i] = line[i] < lines;
      }
      fn(line, active);
    }
  }
};

/// Waits until every line the warp reads carries `flag`, and returns this lane's two words of
/// each: up to kBatch lines per lane (line[i] of `slot`, where active[i]), polled together.
/// `slot` is already offset to the lane's piece. Every lane of the warp must call it (inactive
/// lines only vote).
__device__ __forceinline__ void waitLines(const char* slot, const size_t (&line)[kBatch],
                                          const bool (&active)[kBatch], bool flagLane,
                                          uint64_t flag, uint64_t (&lo)[kBatch],
                                          uint64_t (&hi)[kBatch], int rank, int peer,
                                          ctran::WaitBound bound) {
  auto poll = [&] {
    bool ready = true;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (!active[i]) continue;
      lineLoad(slot + line[i] * kLineBytes, lo[i], hi[i]);
      ready &= !flagLane || hi[i] == flag;
    }
    return warpAll(ready);
  };
  if (poll()) return;
  ctran::device::WaitClock clock(bound);
  for (;;) {
    if (poll()) return;
    // The warp polls together (poll() votes), so it stops together: on any lane's abort.
    const bool expired = clock.expired();
    if (expired && !clock.aborted)
      ctran::device::waitTimedOut(ctran::WaitSubject::kLine, "a line", rank, peer, flag,
                                  flagLane ? hi[0] : 0, bound);
    if (warpAny(expired)) return;
  }
}

}  // namespace rcclx::gpu::lines
