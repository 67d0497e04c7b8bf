// What the two GPU low-precision kernels share: where a chunk lives in a rank's staging, the
// flag values of a round, and the flag exchange between the grid blocks of the ranks.
#pragma once

#include "device/lp/lp_device.cuh"
#include "device/lp/lp_gpu_launch.hpp"

namespace rcclx::lp::device {

/// Chunk (grid block `block`, round slot `slot`, `phase`, source rank `src`) in rank `rank`'s
/// staging half `half`.
__device__ __forceinline__ ChunkRef stagedChunk(const LpStaging& s, int rank, int half, int block,
                                                int slot, int phase, int src) {
  const size_t index =
      ((static_cast<size_t>(block) * s.slots + slot) * 2 + phase) * s.window.nranks + src;
  return chunkAt(
      s.window.data[rank] + static_cast<size_t>(half) * s.halfBytes + index * s.chunkBytes,
      s.chunkBlocks);
}

/// Flag of round k of the kernel with `epoch`: grows with every round of every kernel.
__device__ __forceinline__ uint64_t roundFlag(uint32_t epoch, uint32_t k) {
  return (static_cast<uint64_t>(epoch) << 32) | (k + 1);
}

/// Every peer's flag (half, phase, this block, slot) is set to `flag`, then this rank's flags
/// from every peer are awaited; the block meets before and after. Thread p talks to rank p.
__device__ __forceinline__ void exchangeFlags(const ctran::DeviceWindowHandle& h, int half,
                                              int phase, int slot, uint64_t flag,
                                              ctran::WaitBound bound, const char* what) {
  __syncthreads();
  const int p = static_cast<int>(threadIdx.x);
  if (p < h.nranks && p != h.rank) {
    const int b = static_cast<int>(blockIdx.x);
    ctran::device::signalRelease(h.signals[p] + lpSignalIndex(half, phase, h.rank, b, slot), flag);
    ctran::device::signalWait(h.signals[h.rank] + lpSignalIndex(half, phase, p, b, slot), flag,
                              h.rank, p, bound, what);
  }
  __syncthreads();
}

/// Quantizer blocks [lo, hi) of the segment of `blocks` blocks that chunk j covers.
struct ChunkSpan {
  size_t lo, hi;
};
__device__ __forceinline__ ChunkSpan chunkSpan(size_t segmentBlocks, size_t j, size_t chunkBlocks) {
  const size_t lo = j * chunkBlocks;
  if (lo >= segmentBlocks) return {0, 0};
  const size_t hi = lo + chunkBlocks < segmentBlocks ? lo + chunkBlocks : segmentBlocks;
  return {lo, hi};
}

}  // namespace rcclx::lp::device
