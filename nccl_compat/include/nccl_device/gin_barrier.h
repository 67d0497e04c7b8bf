/*
 * nccl_device/gin_barrier.h of RCCLX's NCCL-ABI library: NCCL's barrier over a GIN-connected
 * team (the world, the rail team or any team), as a session or a one-shot call, and the host
 * call asking for its state. RCCLX has no GIN back-end: the host call refuses and a session
 * stops the kernel with a message when it is made.
 */
#ifndef RCCLX_NCCL_DEVICE_GIN_BARRIER_H_
#define RCCLX_NCCL_DEVICE_GIN_BARRIER_H_

#include "core.h"
#include "gin.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The resource a device communicator would need for nBarriers GIN barriers over team. RCCLX
 * has no GIN back-end, so it returns ncclInvalidUsage and writes neither output
 * (ncclInvalidArgument for a NULL output or a negative count). */
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include <cuda/atomic>

/* What a GIN barrier drains before it returns, as bits: the peers' puts into this rank (Put),
 * this rank's gets (Get), or nothing (None; Relaxed is its older name). An unscoped enum, as
 * NCCL declares it: its values also convert to integers. */
enum ncclGinFenceLevel : uint32_t { None = 0, Put = 1u << 0, Get = 1u << 1, Relaxed = None };
__host__ __device__ constexpr ncclGinFenceLevel operator|(ncclGinFenceLevel a,
                                                          ncclGinFenceLevel b) {
  return static_cast<ncclGinFenceLevel>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
__host__ __device__ constexpr ncclGinFenceLevel operator&(ncclGinFenceLevel a,
                                                          ncclGinFenceLevel b) {
  return static_cast<ncclGinFenceLevel>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}

/* Passed to a GIN barrier instead of an ncclGin: fence every context of the communicator. */
struct ncclGinAllContexts {
  ncclDevComm const& comm;
  __host__ __device__ constexpr ncclGinAllContexts(ncclDevComm const& devComm) : comm(devComm) {}
};

/* One use of GIN barrier `index` over a team by a cooperative group. */
template <typename Coop>
struct ncclGinBarrierSession {
  __device__ ncclGinBarrierSession(Coop, ncclGin, ncclTeam, ncclGinBarrierHandle, uint32_t) {
    refuse();
  }
  __device__ ncclGinBarrierSession(Coop, ncclGin, ncclTeamTagRail, uint32_t) { refuse(); }
  __device__ ncclGinBarrierSession(Coop, ncclGin, ncclTeamTagWorld, uint32_t) { refuse(); }
  __device__ ncclGinBarrierSession(Coop, ncclGinAllContexts, ncclTeam, ncclGinBarrierHandle,
                                   uint32_t) {
    refuse();
  }
  __device__ ncclGinBarrierSession(Coop, ncclGinAllContexts, ncclTeamTagRail, uint32_t) {
    refuse();
  }
  __device__ ncclGinBarrierSession(Coop, ncclGinAllContexts, ncclTeamTagWorld, uint32_t) {
    refuse();
  }
  ncclGinBarrierSession(ncclGinBarrierSession const&) = delete;

  __device__ void sync(Coop, cuda::memory_order,
                       ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    refuse();
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, ncclGinFenceLevel, uint64_t) { refuse(); }

 private:
  [[noreturn]] __device__ static void refuse() {
    rcclx_nccl_device::noGin("ncclGinBarrierSession");
  }
};

/* A whole GIN barrier (session made, synced, ended) in one call. */
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGin, ncclTeam, ncclGinBarrierHandle, uint32_t,
                                      cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGin, ncclTeamTagRail, uint32_t,
                                      cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGin, ncclTeamTagWorld, uint32_t,
                                      cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGinAllContexts, ncclTeam, ncclGinBarrierHandle,
                                      uint32_t, cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGinAllContexts, ncclTeamTagRail, uint32_t,
                                      cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
template <typename Coop>
__device__ inline void ncclGinBarrier(Coop, ncclGinAllContexts, ncclTeamTagWorld, uint32_t,
                                      cuda::memory_order = cuda::memory_order_acq_rel,
                                      ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                          ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclGinBarrier");
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_GIN_BARRIER_H_ */
