/*
 * nccl_device/coop.h of RCCLX's NCCL-ABI library: NCCL's cooperative groups, the sets of threads
 * that call a device function of NCCL's API together. Each offers thread_rank(), size(),
 * num_threads() and sync(), as CUDA's cooperative groups do; ncclCoopAny holds any of them
 * behind one type, and ncclCoopBcast shares a value from one member with the others. Plain
 * CUDA: these work.
 */
#ifndef RCCLX_NCCL_DEVICE_COOP_H_
#define RCCLX_NCCL_DEVICE_COOP_H_

#include "utility.h"

#if defined(__CUDACC__)
#include <cstdint>
#include <new>

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

/* Any cooperative group, chosen at run time: the group is copied into 16 bytes of storage and
 * its operations are reached through a table of functions made for its type. Functions taking
 * a group from code that is not a template (NCCL's C-style GIN calls) take this type. */
struct ncclCoopAny {
  struct Storage {
    alignas(alignof(void*)) char space[16];
  };
  struct VTable {
    int (*thread_rank)(void const*);
    int (*size)(void const*);
    void (*sync)(void*);
  };

  Storage storage;
  VTable const* vtable;

  ncclCoopAny() = default;
  ncclCoopAny(ncclCoopAny const&) = default;
  ncclCoopAny(ncclCoopAny&&) = default;

  template <typename Coop>
  __device__ ncclCoopAny(Coop coop) {
    static_assert(sizeof(Coop) <= sizeof(Storage) && alignof(Coop) <= alignof(Storage),
                  "ncclCoopAny: the cooperative group does not fit its storage");
    ::new (static_cast<void*>(&storage)) Coop(coop);
    vtable = tableFor<Coop>();
  }

  __device__ int thread_rank() const { return vtable->thread_rank(&storage); }
  __device__ int size() const { return vtable->size(&storage); }
  __device__ int num_threads() const { return vtable->size(&storage); }
  __device__ void sync() { vtable->sync(&storage); }

 private:
  template <typename Coop>
  __device__ static int rankOf(void const* group) {
    return static_cast<Coop const*>(group)->thread_rank();
  }
  template <typename Coop>
  __device__ static int sizeOf(void const* group) {
    return static_cast<Coop const*>(group)->size();
  }
  template <typename Coop>
  __device__ static void syncOf(void* group) {
    static_cast<Coop*>(group)->sync();
  }
  template <typename Coop>
  __device__ static VTable const* tableFor() {
    static constexpr VTable table = {&rankOf<Coop>, &sizeOf<Coop>, &syncOf<Coop>};
    return &table;
  }
};

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
/* The lanes of the calling warp that take part in a call made by every member of coop: a group
 * within one warp is its own answer; every thread of a wider group arrives, so its whole warp
 * does. */
template <typename Coop>
__device__ __forceinline__ ncclCoopWarp ncclCoopCoalesced(Coop) {
  return ncclCoopWarp();
}
template <int nThreads>
__device__ __forceinline__ ncclCoopTile<nThreads> ncclCoopCoalesced(ncclCoopTile<nThreads> coop) {
  return coop;
}
__device__ __forceinline__ ncclCoopLanes ncclCoopCoalesced(ncclCoopLanes coop) { return coop; }

/* ---- ncclCoopBcast: member `root` (a thread_rank of coop) gives `value` to every member -----
 * Values of up to 16 bytes. Groups within a warp shuffle it through registers; wider groups pass
 * it through a slot of shared memory, so all members sync first unless entrySync is false (the
 * caller knows no member still reads an earlier broadcast of the same group). */
namespace rcclx_nccl_device {

template <typename T>
struct Words {
  static constexpr int kCount = (sizeof(T) + sizeof(uint32_t) - 1) / sizeof(uint32_t);
  union {
    T value;
    uint32_t word[kCount];
  };
  __device__ explicit Words(T v) : value(v) {}
};

/* One 16-byte slot per warp-span id (0..14) and one for the whole block. */
__device__ __forceinline__ ulonglong2* warpSpanSlots() {
  __shared__ ulonglong2 slots[15];
  return slots;
}
__device__ __forceinline__ ulonglong2* ctaSlot() {
  __shared__ ulonglong2 slot;
  return &slot;
}

template <typename T, typename Coop>
__device__ __forceinline__ T bcastThroughSlot(Coop& coop, ulonglong2* slot, T value, int root,
                                              bool entrySync) {
  static_assert(sizeof(T) <= sizeof(ulonglong2), "ncclCoopBcast: values of up to 16 bytes");
  if (entrySync) coop.sync();
  if (coop.thread_rank() == root) *reinterpret_cast<T*>(slot) = value;
  coop.sync();
  return *reinterpret_cast<T const*>(slot);
}

}  // namespace rcclx_nccl_device

template <int nThreads, typename T>
__device__ __forceinline__ T ncclCoopBcast(ncclCoopTile<nThreads> coop, T value, int root,
                                           bool entrySync = true) {
  (void)entrySync;
  rcclx_nccl_device::Words<T> w(value);
  for (int i = 0; i < w.kCount; ++i)
    w.word[i] = __shfl_sync(coop.laneMask(), w.word[i], root, nThreads);
  return w.value;
}
template <typename T>
__device__ __forceinline__ T ncclCoopBcast(ncclCoopLanes coop, T value, int root,
                                           bool entrySync = true) {
  (void)entrySync;
  /* The lane holding thread_rank `root`: the (root + 1)-th set bit of the mask. */
  const int source = static_cast<int>(__fns(coop.lmask, 0, root + 1));
  rcclx_nccl_device::Words<T> w(value);
  for (int i = 0; i < w.kCount; ++i) w.word[i] = __shfl_sync(coop.lmask, w.word[i], source);
  return w.value;
}
template <typename T>
__device__ __forceinline__ T ncclCoopBcast(ncclCoopWarpSpan coop, T value, int root,
                                           bool entrySync = true) {
  return rcclx_nccl_device::bcastThroughSlot(coop, rcclx_nccl_device::warpSpanSlots() + coop.id,
                                             value, root, entrySync);
}
template <typename T>
__device__ __forceinline__ T ncclCoopBcast(ncclCoopCta coop, T value, int root,
                                           bool entrySync = true) {
  return rcclx_nccl_device::bcastThroughSlot(coop, rcclx_nccl_device::ctaSlot(), value, root,
                                             entrySync);
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_COOP_H_ */
