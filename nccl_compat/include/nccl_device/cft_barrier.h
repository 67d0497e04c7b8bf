/*
 * nccl_device/cft_barrier.h of RCCLX's NCCL-ABI library: NCCL's barrier over the CFT team of a
 * device communicator, whose arrivals travel through the collective fabric transport, and the
 * host call asking for its state. RCCLX has no CFT: the host call refuses, and a session stops
 * the kernel with a message when it is made.
 */
#ifndef RCCLX_NCCL_DEVICE_CFT_BARRIER_H_
#define RCCLX_NCCL_DEVICE_CFT_BARRIER_H_

#include "cft.h"
#include "core.h"

/* Alignment, and size, of one barrier word in a CFT barrier's buffer. */
#define NCCL_CFT_BARRIER_ALIGN 16
#define NCCL_CFT_BARRIER_GRAN NCCL_CFT_BARRIER_ALIGN

#ifdef __cplusplus
extern "C" {
#endif
/* The resource a device communicator would need for nBarriers CFT barriers over team. RCCLX
 * has no CFT, so it returns ncclInvalidUsage and writes neither output (ncclInvalidArgument
 * for a NULL output or a negative count). NCCL's library declares this call without exporting
 * it; RCCLX's exports it. */
ncclResult_t ncclCftBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                             ncclCftBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclCftBarrierCreateRequirement(ncclTeam_t team, int nBarriers,
                                              ncclCftBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include <cuda/atomic>

/* The payload of one barrier arrival: ncclCftOpElemGran 32-bit words. */
constexpr uint32_t ncclCftOpElemGran = 4;
constexpr uint32_t ncclCftOpByteGran = ncclCftOpElemGran * sizeof(uint32_t);

/* One use of CFT barrier `index` of a device communicator by a cooperative group, as an LSA
 * barrier session, with the proxies whose memory operations it orders. */
template <typename Coop>
struct ncclCftBarrierSession {
  __device__ ncclCftBarrierSession(Coop, ncclDevComm const&, uint32_t, bool = false) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession");
  }
  ncclCftBarrierSession(ncclCftBarrierSession const&) = delete;

  __device__ void arrive(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession::arrive");
  }
  __device__ void wait(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession::wait");
  }
  __device__ void sync(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession::sync");
  }
  __device__ ncclResult_t wait(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType,
                               uint64_t) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession::wait");
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType,
                               uint64_t) {
    rcclx_nccl_device::noCft("ncclCftBarrierSession::sync");
  }
};
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_CFT_BARRIER_H_ */
