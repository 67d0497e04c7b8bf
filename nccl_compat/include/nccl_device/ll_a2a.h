/*
 * nccl_device/ll_a2a.h of RCCLX's NCCL-ABI library: NCCL's low-latency (LL) all-to-all, a
 * buffer of a device communicator through which each block of a kernel sends elements to its
 * peers' slots, flagged so that the receiver polls no separate signal. RCCLX makes no device
 * communicator to hold that buffer: the slot count is computed (it depends on the arguments
 * alone), the requirement is refused, and a session stops the kernel with a message when it is
 * made.
 */
#ifndef RCCLX_NCCL_DEVICE_LL_A2A_H_
#define RCCLX_NCCL_DEVICE_LL_A2A_H_

#include "core.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The slots one block needs to send maxElts elements of up to maxEltSize bytes each: in NCCL's
 * LL format an element travels as ceil(maxEltSize / 8) 16-byte lines (8 bytes of data and an
 * epoch word each), so the count is maxElts * ceil(maxEltSize / 8); 0 when either is 0. A
 * negative argument, or a count an int cannot hold, returns -1 and leaves the reason in
 * ncclGetLastError (the result cannot carry an error code). */
int ncclLLA2ACalcSlots(int maxElts, int maxEltSize);
int pncclLLA2ACalcSlots(int maxElts, int maxEltSize);

/* The resource a device communicator would need for LL all-to-all buffers of nBlocks blocks of
 * nSlots slots each. RCCLX makes no device communicators, so it returns ncclInvalidUsage and
 * writes neither output (ncclInvalidArgument for a NULL output or a negative count). */
ncclResult_t ncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                        ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclLLA2ACreateRequirement(int nBlocks, int nSlots, ncclLLA2AHandle_t* outHandle,
                                         ncclDevResourceRequirements_t* outReq);
#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include <utility>

/* One all-to-all round of block `block` of a kernel over `team`, through LL buffer `handle`
 * (maxElts elements per peer at most; with multimem, bcast() reaches every peer with one
 * store). A round is ended by endEpoch(), after every peer was sent something and every peer's
 * slot was received from. */
template <typename Coop>
struct ncclLLA2ASession {
  __device__ ncclLLA2ASession(Coop, ncclDevComm const&, ncclTeam, ncclLLA2AHandle, uint32_t, int,
                              bool = false, ncclMultimemHandle = {}) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession");
  }
  ncclLLA2ASession(ncclLLA2ASession const&) = delete;

  /* Element `slot` of `peer`'s buffer for this rank. */
  template <typename T>
  __device__ void send(int, int, T) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession::send");
  }
  /* Element `slot` of every peer's buffer for this rank. */
  template <typename T>
  __device__ void bcast(int, T) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession::bcast");
  }
  /* Waits for element `slot` of this rank's buffer and returns it. */
  template <typename T>
  __device__ T recv(int) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession::recv");
  }
  /* Elements eltStart, eltStart + eltStride, ... (eltCount of them, between MinEltCount and
   * MaxEltCount) into vals. */
  template <int MinEltCount, int MaxEltCount, typename T>
  __device__ void recvUnrolled(int, int, int, T (&)[MaxEltCount]) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession::recvUnrolled");
  }
  /* The same elements, each of type Elt turned into an accumulator by eltToAcc and folded with
   * red. */
  template <int Unroll, typename Elt, typename EltToAcc, typename Reduce>
  __device__ auto recvReduce(int, int, int, EltToAcc eltToAcc, Reduce)
      -> decltype(eltToAcc(std::declval<Elt>())) {
    rcclx_nccl_device::noLlA2A("ncclLLA2ASession::recvReduce");
  }
  __device__ void endEpoch(Coop) { rcclx_nccl_device::noLlA2A("ncclLLA2ASession::endEpoch"); }
};
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_LL_A2A_H_ */
