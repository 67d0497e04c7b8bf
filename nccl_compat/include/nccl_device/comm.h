/*
 * nccl_device/comm.h of RCCLX's NCCL-ABI library: the device communicator (ncclDevComm), which
 * nccl_device/core.h declares with the rest of the device API's core types.
 */
#ifndef RCCLX_NCCL_DEVICE_COMM_H_
#define RCCLX_NCCL_DEVICE_COMM_H_

#include "core.h"

#endif /* RCCLX_NCCL_DEVICE_COMM_H_ */
