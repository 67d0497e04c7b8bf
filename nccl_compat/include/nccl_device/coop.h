/*
 * nccl_device/coop.h of RCCLX's NCCL-ABI library: NCCL's cooperative groups, the sets of threads
 * that call a device function of NCCL's API together. Each offers thread_rank(), size(),
 * num_threads() and sync(), as CUDA's cooperative groups do. Plain CUDA: these work.
 */
#ifndef RCCLX_NCCL_DEVICE_COOP_H_
#define RCCLX_NCCL_DEVICE_COOP_H_

#if defined(__CUDACC__)
#include <cstdint>

namespace rcclx_nccl_device {

__device__ __forceinline__ uint32_t laneId() {
  uint32_t lane;
  asm("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__device__ __forceinline__ uint32_t lanesBelow() {
  uint32_t mask;
  asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
  return mask;
}

}  // namespace rcclx_nccl_device

/* An aligned group of nThreads lanes of one warp (a power of two up to 32). */
template <int nThreads>
struct ncclCoopTile {
  static_assert(nThreads > 0 && nThreads <= 32 && (nThreads & (nThreads - 1)) == 0,
                "ncclCoopTile: the thread count must be a power of two up to 32");
  __device__ __forceinline__ int thread_rank() const {
    return static_cast<int>(rcclx_nccl_device::laneId()) % nThreads;
  }
  __device__ __forceinline__ constexpr int size() const { return nThreads; }
  __device__ __forceinline__ constexpr int num_threads() const { return nThreads; }
  /* The lanes of this tile within the warp. */
  __device__ __forceinline__ uint32_t laneMask() const {
    const uint32_t first = rcclx_nccl_device::laneId() & ~static_cast<uint32_t>(nThreads - 1);
    return (0xffffffffu >> (32 - nThreads)) << first;
  }
  __device__ __forceinline__ void sync() {
    if (nThreads > 1) __syncwarp(laneMask());
  }
};

typedef ncclCoopTile<1> ncclCoopThread;
typedef ncclCoopTile<32> ncclCoopWarp;

/* The lanes of one warp set in lmask. */
struct ncclCoopLanes {
  uint32_t lmask;
  __device__ __forceinline__ constexpr ncclCoopLanes(uint32_t mask = 0xffffffffu) : lmask(mask) {}
  __device__ __forceinline__ int thread_rank() const {
    return __popc(lmask & rcclx_nccl_device::lanesBelow());
  }
  __device__ __forceinline__ int size() const { return __popc(lmask); }
  __device__ __forceinline__ int num_threads() const { return __popc(lmask); }
  __device__ __forceinline__ void sync() { __syncwarp(lmask); }
};

/* nWarps consecutive warps from warp0, synchronised on named barrier 1 + id (id in 0..14, one
 * span per id at a time). */
struct ncclCoopWarpSpan {
  uint32_t warp0 : 8, nWarps : 8, id : 8;
  __device__ __forceinline__ constexpr ncclCoopWarpSpan(int first, int count, int barrierId)
      : warp0(first), nWarps(count), id(barrierId) {}
  __device__ __forceinline__ int thread_rank() const {
    return static_cast<int>(threadIdx.x) - 32 * static_cast<int>(warp0);
  }
  __device__ __forceinline__ int size() const { return 32 * nWarps; }
  __device__ __forceinline__ int num_threads() const { return 32 * nWarps; }
  __device__ __forceinline__ void sync() {
    asm volatile("barrier.sync.aligned %0, %1;" ::"r"(1 + id), "r"(32 * nWarps) : "memory");
  }
};

/* Every thread of the block (one-dimensional blocks). */
struct ncclCoopCta {
  __device__ __forceinline__ int thread_rank() const { return threadIdx.x; }
  __device__ __forceinline__ int size() const { return blockDim.x; }
  __device__ __forceinline__ int num_threads() const { return blockDim.x; }
  __device__ __forceinline__ void sync() { __syncthreads(); }
};

template <int nThreads>
__device__ __forceinline__ uint32_t ncclCoopGetLaneMask(ncclCoopTile<nThreads> coop) {
  return coop.laneMask();
}
__device__ __forceinline__ uint32_t ncclCoopGetLaneMask(ncclCoopLanes coop) { return coop.lmask; }
__device__ __forceinline__ uint32_t ncclCoopGetLaneMask(ncclCoopWarpSpan) { return 0xffffffffu; }
__device__ __forceinline__ uint32_t ncclCoopGetLaneMask(ncclCoopCta) { return 0xffffffffu; }

/* Whether the group is known, at compile time, to be one thread. */
template <int nThreads>
__device__ __forceinline__ constexpr bool ncclCoopIsThread(ncclCoopTile<nThreads>) {
  return nThreads == 1;
}
__device__ __forceinline__ constexpr bool ncclCoopIsThread(ncclCoopLanes) { return false; }
__device__ __forceinline__ constexpr bool ncclCoopIsThread(ncclCoopWarpSpan) { return false; }
__device__ __forceinline__ constexpr bool ncclCoopIsThread(ncclCoopCta) { return false; }

/* Whether the group is known, at compile time, to lie within one warp. */
template <int nThreads>
__device__ __forceinline__ constexpr bool ncclCoopWithinWarp(ncclCoopTile<nThreads>) {
  return true;
}
__device__ __forceinline__ constexpr bool ncclCoopWithinWarp(ncclCoopLanes) { return true; }
__device__ __forceinline__ constexpr bool ncclCoopWithinWarp(ncclCoopWarpSpan) { return false; }
__device__ __forceinline__ constexpr bool ncclCoopWithinWarp(ncclCoopCta) { return false; }

/* The lanes of the calling warp that are active now. */
__device__ __forceinline__ ncclCoopLanes ncclCoopCoalesced() {
  return ncclCoopLanes{__activemask()};
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_COOP_H_ */
