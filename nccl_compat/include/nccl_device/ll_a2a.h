/*
 * nccl_device/ll_a2a.h of RCCLX's NCCL-ABI library: the host calls of NCCL's low-latency (LL)
 * all-to-all, a buffer of a device communicator through which each block of a kernel sends
 * elements to its peers' slots. RCCLX makes no device communicator to hold that buffer: the
 * slot count is computed (it depends on the arguments alone), the requirement is refused. The
 * device-side session is not declared here.
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

#endif /* RCCLX_NCCL_DEVICE_LL_A2A_H_ */
