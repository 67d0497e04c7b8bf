/*
 * nccl_device/lsa_barrier.h of RCCLX's NCCL-ABI library: NCCL's barrier among the ranks of an
 * LSA team, run by a cooperative group of each rank. RCCLX makes no device communicator to
 * hold its state: the host call asking for one is refused, and a session stops the kernel with
 * a message when it is made.
 */
#ifndef RCCLX_NCCL_DEVICE_LSA_BARRIER_H_
#define RCCLX_NCCL_DEVICE_LSA_BARRIER_H_

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The resource a device communicator would need for nBarriers LSA barriers over team. RCCLX
 * makes no device communicators, so it returns ncclInvalidUsage and writes neither output
 * (ncclInvalidArgument for a NULL output or a negative count). */
ncclResult_t ncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclLsaBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLsaBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                              ncclLsaBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include <cuda/atomic>

/* One use of barrier `index` of a device communicator by a cooperative group: arrive() then
 * wait(), or sync() for both; memory operations before arrive() are visible to the peers after
 * their wait() as `order` says. With multimem the arrival travels through the team's multimem
 * group. The timed forms (a budget in clock cycles) return ncclTimeout in NCCL when it runs
 * out. */
template <typename Coop>
struct ncclLsaBarrierSession {
  __device__ ncclLsaBarrierSession(Coop, ncclDevComm const&, ncclTeam, ncclLsaBarrierHandle,
                                   uint32_t, bool = false, ncclMultimemHandle = {}) {
    refuse("ncclLsaBarrierSession");
  }
  __device__ ncclLsaBarrierSession(Coop, ncclDevComm const&, ncclTeamTagLsa, uint32_t,
                                   bool = false) {
    refuse("ncclLsaBarrierSession");
  }
  ncclLsaBarrierSession(ncclLsaBarrierSession const&) = delete;

  __device__ void arrive(Coop, cuda::memory_order) { refuse("ncclLsaBarrierSession::arrive"); }
  __device__ void wait(Coop, cuda::memory_order) { refuse("ncclLsaBarrierSession::wait"); }
  __device__ void sync(Coop, cuda::memory_order) { refuse("ncclLsaBarrierSession::sync"); }
  __device__ ncclResult_t wait(Coop, cuda::memory_order, uint64_t) {
    refuse("ncclLsaBarrierSession::wait");
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, uint64_t) {
    refuse("ncclLsaBarrierSession::sync");
  }

 private:
  [[noreturn]] __device__ static void refuse(const char* what) {
    rcclx_nccl_device::noLsaBarriers(what);
  }
};
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_LSA_BARRIER_H_ */
