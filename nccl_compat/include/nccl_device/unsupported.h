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

/* Never returns, so a refused function needs no made-up result after it. */
[[noreturn]] __device__ __noinline__ static void unsupported(const char* function,
                                                             const char* why) {
  if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
    printf(
        "RCCLX libnccl: %s called in a kernel (block %u): %s; RCCLX provides no device "
        "communicators (ncclCommQueryProperties reports deviceApiSupport = 0)\n",
        function, blockIdx.x, why);
  }
  __trap();
  __builtin_unreachable();
}

/* The reasons, one per capability a device communicator of NCCL's would bring. */
[[noreturn]] __device__ inline void noWindows(const char* what) {
  unsupported(what, "windows are not readable by kernels");
}
[[noreturn]] __device__ inline void noDevComm(const char* what) {
  unsupported(what, "device communicators are not provided");
}
[[noreturn]] __device__ inline void noLsaBarriers(const char* what) {
  unsupported(what, "LSA barriers are not provided");
}
[[noreturn]] __device__ inline void noMultimem(const char* what) {
  unsupported(what, "multimem is not provided");
}
[[noreturn]] __device__ inline void noGin(const char* what) {
  unsupported(what, "GIN (GPU-initiated networking) is not provided");
}
[[noreturn]] __device__ inline void noCft(const char* what) {
  unsupported(what, "CFT (the collective fabric transport) is not provided");
}
[[noreturn]] __device__ inline void noLlA2A(const char* what) {
  unsupported(what, "LL all-to-all buffers are not provided");
}

}  // namespace rcclx_nccl_device
#endif

#endif /* RCCLX_NCCL_DEVICE_UNSUPPORTED_H_ */
