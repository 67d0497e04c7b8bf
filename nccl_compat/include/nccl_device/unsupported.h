/*
 * nccl_device/unsupported.h of RCCLX's NCCL-ABI library: how a device function of NCCL's API
 * that RCCLX does not provide fails. It prints one line per thread block naming the function
 * and why, then traps, so the kernel (and the next call on its stream) fails with
 * cudaErrorLaunchFailure instead of computing wrong results. Programs cannot reach one with a
 * device communicator of RCCLX's (ncclDevCommCreate makes none); one built for NCCL and passed
 * a zeroed or foreign ncclDevComm stops here.
 */
#ifndef RCCLX_NCCL_DEVICE_UNSUPPORTED_H_
#define RCCLX_NCCL_DEVICE_UNSUPPORTED_H_

#if defined(__CUDACC__)
#include <cstdio>

namespace rcclx_nccl_device {

__device__ __noinline__ static void unsupported(const char* function, const char* why) {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    printf(
        "RCCLX libnccl: %s called in a kernel (block %u): %s; RCCLX provides no device "
        "communicators (ncclCommQueryProperties reports deviceApiSupport = 0)\n",
        function, blockIdx.x, why);
  }
  __trap();
}

}  // namespace rcclx_nccl_device
#endif

#endif /* RCCLX_NCCL_DEVICE_UNSUPPORTED_H_ */
