/*
 * nccl_device.h of RCCLX's NCCL-ABI library (libnccl.so.2): NCCL's device API, declared with
 * NCCL 2.31's names, field order, signatures and initializer macros so that programs written
 * for it compile unchanged (NVIDIA's nccl-tests includes it from NCCL 2.28 on). Each part also
 * has the header name NCCL gives it (nccl_device/core.h, nccl_device/gin.h, ...), for programs
 * that include one directly.
 *
 * What it provides and what it refuses:
 * - host side (C, C++, CUDA): the types (ncclTeam, ncclDevComm, ncclDevCommRequirements,
 *   ncclCommProperties, the handles), NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER,
 *   NCCL_COMM_PROPERTIES_INITIALIZER, ncclCommQueryProperties, the team calls and arithmetic,
 *   ncclLLA2ACalcSlots and ncclSymPtr's arithmetic. RCCLX creates no device communicators:
 *   ncclDevCommCreate (nccl.h) returns ncclInvalidUsage naming the requirements it cannot
 *   meet, and ncclCommQueryProperties reports deviceApiSupport = false, so a program can tell
 *   before asking; the resource-requirement calls (LSA, GIN and CFT barriers, LL all-to-all,
 *   GIN scratch buffers) refuse likewise;
 * - device side (nvcc only): the cooperative groups (ncclCoopCta, ncclCoopWarp, ncclCoopAny,
 *   ncclCoopBcast, ...), the teams of a device communicator and the copy / reduce helpers on
 *   plain addresses work; window addresses (ncclGetLsaPointer, ...), LSA, GIN, CFT and hybrid
 *   barriers, LL all-to-all sessions, multimem, GIN, CFT transfers and the helpers reaching
 *   peers through windows compile, and stop the kernel with a message
 *   (nccl_device/unsupported.h) if they are ever reached.
 *
 * docs/nccl_compat.rst says more.
 */
#ifndef NCCL_DEVICE_H_
#define NCCL_DEVICE_H_

#include "nccl_device/barrier.h"
#include "nccl_device/cft.h"
#include "nccl_device/cft_barrier.h"
#include "nccl_device/comm.h"
#include "nccl_device/coop.h"
#include "nccl_device/core.h"
#include "nccl_device/gin.h"
#include "nccl_device/gin_barrier.h"
#include "nccl_device/ll_a2a.h"
#include "nccl_device/lsa_barrier.h"
#include "nccl_device/net_device.h"
#include "nccl_device/ptr.h"
#include "nccl_device/reduce_copy.h"
#include "nccl_device/utility.h"

#endif /* NCCL_DEVICE_H_ */
