/*
 * nccl_device/reduce_copy.h of RCCLX's NCCL-ABI library: NCCL's cooperative copy and sum
 * helpers over windows (LSA peers or a multimem group), in the forms that take windows and
 * byte offsets. They read peers' memory through the window, which RCCLX's windows do not
 * describe to kernels: each stops the kernel with a message.
 */
#ifndef RCCLX_NCCL_DEVICE_REDUCE_COPY_H_
#define RCCLX_NCCL_DEVICE_REDUCE_COPY_H_

#include "core.h"

#if defined(__CUDACC__)
namespace rcclx_nccl_device {
__device__ inline void noWindows(const char* what) {
  unsupported(what, "windows are not readable by kernels");
}
}  // namespace rcclx_nccl_device

/* dst (window, offset) on every LSA peer = sum over LSA peers of src (window, offset). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclWindow_t, size_t, ncclWindow_t, size_t, IntCount,
                                     ncclDevComm const&) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclWindow_t, size_t, ncclWindow_t, size_t, IntCount,
                                     ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
/* dst = sum over LSA peers of src (window, offset), dst in local memory. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount, ncclDevComm const&) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
/* src (local memory) copied to (window, offset) on every LSA peer. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclDevComm const&) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
/* The multimem forms: one multicast load-reduce / store reaches the whole group. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumCopy(Coop, ncclWindow_t, size_t, ncclMultimemHandle,
                                          ncclWindow_t, size_t, ncclMultimemHandle, IntCount) {
  rcclx_nccl_device::unsupported("ncclMultimemReduceSumCopy", "multimem is not provided");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount,
                                      ncclMultimemHandle) {
  rcclx_nccl_device::unsupported("ncclMultimemReduceSum", "multimem is not provided");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclMultimemHandle) {
  rcclx_nccl_device::unsupported("ncclMultimemCopy", "multimem is not provided");
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_REDUCE_COPY_H_ */
