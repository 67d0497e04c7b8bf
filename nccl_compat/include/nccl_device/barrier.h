/*
 * nccl_device/barrier.h of RCCLX's NCCL-ABI library: NCCL's hybrid barrier, an LSA barrier
 * within each group of ranks that share memory and a GIN barrier between the groups (over the
 * world, the rail team, the LSA team or any pair of inner and outer teams), as a session or a
 * one-shot call. RCCLX has neither LSA barriers nor GIN: a session stops the kernel with a
 * message when it is made.
 */
#ifndef RCCLX_NCCL_DEVICE_BARRIER_H_
#define RCCLX_NCCL_DEVICE_BARRIER_H_

#include "core.h"
#include "gin_barrier.h"
#include "lsa_barrier.h"

#if defined(__CUDACC__)
#include <cuda/atomic>

template <typename Coop>
struct ncclBarrierSession {
  /* innerTeam's LSA barrier innerBarHandle, then outerTeam's GIN barrier outerBarHandle. */
  __device__ ncclBarrierSession(Coop, ncclTeam, ncclTeam, ncclGin, ncclLsaBarrierHandle,
                                ncclGinBarrierHandle, uint32_t, bool = false,
                                ncclMultimemHandle = {}) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  __device__ ncclBarrierSession(Coop, ncclTeamTagWorld, ncclGin, uint32_t, bool = false) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  __device__ ncclBarrierSession(Coop, ncclTeamTagLsa, ncclDevComm const&, uint32_t, bool = false) {
    rcclx_nccl_device::noLsaBarriers("ncclBarrierSession");
  }
  __device__ ncclBarrierSession(Coop, ncclTeamTagRail, ncclGin, uint32_t) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  ncclBarrierSession(ncclBarrierSession const&) = delete;

  /* The two halves of the barrier. */
  __device__ ncclLsaBarrierSession<Coop>& lsaBarrier() {
    rcclx_nccl_device::noLsaBarriers("ncclBarrierSession::lsaBarrier");
  }
  __device__ ncclGinBarrierSession<Coop>& ginBarrier() {
    rcclx_nccl_device::noGin("ncclBarrierSession::ginBarrier");
  }

  __device__ void sync(Coop, cuda::memory_order,
                       ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    rcclx_nccl_device::noGin("ncclBarrierSession::sync");
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, ncclGinFenceLevel, uint64_t) {
    rcclx_nccl_device::noGin("ncclBarrierSession::sync");
  }
};

/* A whole hybrid barrier over the world or the rail team in one call. */
template <typename Coop>
__device__ inline void ncclBarrier(Coop, ncclTeamTagWorld, ncclGin, uint32_t,
                                   cuda::memory_order = cuda::memory_order_acq_rel,
                                   ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                       ncclGinFenceLevel::Get,
                                   bool = false) {
  rcclx_nccl_device::noGin("ncclBarrier");
}
template <typename Coop>
__device__ inline void ncclBarrier(Coop, ncclTeamTagRail, ncclGin, uint32_t,
                                   cuda::memory_order = cuda::memory_order_acq_rel,
                                   ncclGinFenceLevel = ncclGinFenceLevel::Put |
                                                       ncclGinFenceLevel::Get) {
  rcclx_nccl_device::noGin("ncclBarrier");
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_BARRIER_H_ */
