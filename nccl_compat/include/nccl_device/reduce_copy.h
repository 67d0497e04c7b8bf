/*
 * nccl_device/reduce_copy.h of RCCLX's NCCL-ABI library: NCCL's cooperative copy and reduction
 * helpers. Each spreads `count` elements over the threads of a cooperative group; a reduction
 * folds its sources element by element (a sum, or the RedOp given) and stores the result to
 * every destination.
 *
 * - The forms whose sources and destinations are plain addresses (the lambda forms, which
 *   return the address of source or destination i, and the Local forms, which step through
 *   memory by a displacement) work: they read and write nothing but what they are given.
 * - The forms reaching peers through windows and symmetric pointers stop the kernel with a
 *   message (RCCLX's windows are not readable by kernels), as do the Multimem forms (multicast
 *   addresses need multimem loads and stores, and RCCLX makes no multimem groups).
 *
 * Template parameters come in NCCL's order, so calls naming them explicitly compile unchanged;
 * UNROLL is accepted and left to the compiler.
 */
#ifndef RCCLX_NCCL_DEVICE_REDUCE_COPY_H_
#define RCCLX_NCCL_DEVICE_REDUCE_COPY_H_

#include "core.h"
#include "ptr.h"

#if defined(__CUDACC__)
namespace rcclx_nccl_device {

/* a + b in T; the fp8 types have no arithmetic of their own and add in float. */
template <typename T>
struct Sum {
  __device__ __forceinline__ T operator()(T const& a, T const& b) const { return a + b; }
};
#if defined(__CUDA_FP8_TYPES_EXIST__)
template <>
struct Sum<__nv_fp8_e4m3> {
  __device__ __forceinline__ __nv_fp8_e4m3 operator()(__nv_fp8_e4m3 a, __nv_fp8_e4m3 b) const {
    return __nv_fp8_e4m3(static_cast<float>(a) + static_cast<float>(b));
  }
};
template <>
struct Sum<__nv_fp8_e5m2> {
  __device__ __forceinline__ __nv_fp8_e5m2 operator()(__nv_fp8_e5m2 a, __nv_fp8_e5m2 b) const {
    return __nv_fp8_e5m2(static_cast<float>(a) + static_cast<float>(b));
  }
};
#endif

/* Element i of the result, for i = coop.thread_rank(), + coop.size(), ... below count: the fold
 * of src(0)[i] .. src(nSrc - 1)[i] with red, stored to dst(0)[i] .. dst(nDst - 1)[i]. Each
 * element is one thread's, so no member waits for another; the caller syncs coop before
 * reading other members' results. Nothing is done without a source. */
template <typename T, typename Coop, typename SrcAt, typename DstAt, typename RedOp,
          typename IntCount>
__device__ __forceinline__ void reduceCopy(Coop coop, SrcAt src, int nSrc, DstAt dst, int nDst,
                                           RedOp const& red, IntCount count) {
  if (nSrc < 1) return;
  const IntCount stride = static_cast<IntCount>(coop.size());
  for (IntCount i = static_cast<IntCount>(coop.thread_rank()); i < count; i += stride) {
    T acc = src(0)[i];
    for (int s = 1; s < nSrc; ++s) acc = red(acc, static_cast<T>(src(s)[i]));
    for (int d = 0; d < nDst; ++d) dst(d)[i] = acc;
  }
}

/* The same address for every index. */
template <typename T>
struct Fixed {
  T* at;
  __device__ __forceinline__ T* operator()(int) const { return at; }
};
/* base + i * displ (displ in elements). */
template <typename T>
struct Strided {
  T* base;
  size_t displ;
  __device__ __forceinline__ T* operator()(int i) const {
    return base + static_cast<size_t>(i) * displ;
  }
};

}  // namespace rcclx_nccl_device

/* ---- Reduce-copy between sets of addresses: nSrc sources folded into nDst destinations ---- */

template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename RedOp,
          typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceLsaCopy(Coop coop, SrcLambda src, int nSrc, DstLambda dst, int nDst,
                                     RedOp const& red, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, src, nSrc, dst, nDst, red, count);
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename RedOp,
          typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceMultimemCopy(Coop, SrcLambda, int, DstLambda, int, RedOp const&,
                                          IntCount) {
  rcclx_nccl_device::noMultimem("ncclLsaReduceMultimemCopy");
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumLsaCopy(Coop coop, SrcLambda src, int nSrc, DstLambda dst, int nDst,
                                        IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, src, nSrc, dst, nDst, rcclx_nccl_device::Sum<T>(), count);
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumMultimemCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  rcclx_nccl_device::noMultimem("ncclLsaReduceSumMultimemCopy");
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumLsaCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumLsaCopy");
}
template <typename T, typename Coop, typename SrcLambda, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumMultimemCopy(Coop, SrcLambda, int, DstLambda, int, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumMultimemCopy");
}

/* ---- Reduce: sources summed into one local destination ------------------------------------ */

template <typename T, typename Coop, typename SrcLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop coop, SrcLambda src, int nSrc, T* dst, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, src, nSrc, rcclx_nccl_device::Fixed<T>{dst}, 1,
                                   rcclx_nccl_device::Sum<T>(), count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclSymPtr<T>, T*, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclSymPtr<T>, T*, IntCount, ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount, ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSum(Coop, ncclSymPtr<T>, T*, IntCount, ncclMultimemHandle) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSum(Coop, T*, T*, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSum");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSum(Coop, ncclWindow_t, size_t, T*, IntCount,
                                      ncclMultimemHandle) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSum");
}
template <typename T, typename Coop, typename SrcLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLocalReduceSum(Coop coop, SrcLambda src, int nSrc, T* dst, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, src, nSrc, rcclx_nccl_device::Fixed<T>{dst}, 1,
                                   rcclx_nccl_device::Sum<T>(), count);
}
/* Sources base, base + displ, ... (nSrc of them, displ in elements). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLocalReduceSum(Coop coop, int nSrc, T* base, size_t displ, T* dst,
                                   IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, rcclx_nccl_device::Strided<T>{base, displ}, nSrc,
                                   rcclx_nccl_device::Fixed<T>{dst}, 1, rcclx_nccl_device::Sum<T>(),
                                   count);
}

/* ---- Copy: one local source to several destinations ---------------------------------------- */

template <typename T, typename Coop, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop coop, T* src, DstLambda dst, int nDst, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, rcclx_nccl_device::Fixed<T>{src}, 1, dst, nDst,
                                   rcclx_nccl_device::Sum<T>(), count);
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclSymPtr<T>, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclSymPtr<T>, IntCount, ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemCopy(Coop, T*, ncclSymPtr<T>, IntCount, ncclMultimemHandle) {
  rcclx_nccl_device::noMultimem("ncclMultimemCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemCopy(Coop, T*, T*, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemCopy(Coop, T*, ncclWindow_t, size_t, IntCount, ncclMultimemHandle) {
  rcclx_nccl_device::noMultimem("ncclMultimemCopy");
}
template <typename T, typename Coop, typename DstLambda, typename IntCount,
          int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLocalCopy(Coop coop, T* src, DstLambda dst, int nDst, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, rcclx_nccl_device::Fixed<T>{src}, 1, dst, nDst,
                                   rcclx_nccl_device::Sum<T>(), count);
}
/* Destinations base, base + displ, ... (nDst of them, displ in elements). */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLocalCopy(Coop coop, T* src, int nDst, T* base, size_t displ, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, rcclx_nccl_device::Fixed<T>{src}, 1,
                                   rcclx_nccl_device::Strided<T>{base, displ}, nDst,
                                   rcclx_nccl_device::Sum<T>(), count);
}

/* ---- Reduce-copy through windows and multimem groups --------------------------------------- */

template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclSymPtr<T>, ncclSymPtr<T>, IntCount, ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclSymPtr<T>, ncclSymPtr<T>, IntCount, ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclWindow_t, size_t, ncclWindow_t, size_t, IntCount,
                                     ncclTeam) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclWindow_t, size_t, ncclWindow_t, size_t, IntCount,
                                     ncclDevComm_t) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumCopy(Coop, ncclSymPtr<T>, ncclTeam, ncclSymPtr<T>, ncclTeam,
                                     IntCount) {
  rcclx_nccl_device::noWindows("ncclLsaReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumCopy(Coop, ncclSymPtr<T>, ncclMultimemHandle, ncclSymPtr<T>,
                                          ncclMultimemHandle, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumCopy(Coop, T*, T*, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumCopy(Coop, ncclWindow_t, size_t, ncclMultimemHandle,
                                          ncclWindow_t, size_t, ncclMultimemHandle, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumMultimemCopy(Coop, ncclSymPtr<T>, ncclTeam, ncclSymPtr<T>,
                                             ncclMultimemHandle, IntCount) {
  rcclx_nccl_device::noMultimem("ncclLsaReduceSumMultimemCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLsaReduceSumMultimemCopy(Coop, ncclSymPtr<T>, ncclTeam, T*, IntCount) {
  rcclx_nccl_device::noMultimem("ncclLsaReduceSumMultimemCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumLsaCopy(Coop, ncclSymPtr<T>, ncclMultimemHandle, ncclSymPtr<T>,
                                             ncclTeam, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumLsaCopy");
}
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclMultimemReduceSumLsaCopy(Coop, T*, ncclSymPtr<T>, ncclTeam, IntCount) {
  rcclx_nccl_device::noMultimem("ncclMultimemReduceSumLsaCopy");
}

/* nSrc local sources (srcBase + i * srcDispl) summed into nDst local destinations
 * (dstBase + j * dstDispl); displacements in elements. */
template <typename T, typename Coop, typename IntCount, int UNROLL = 4 * 16 / sizeof(T)>
__device__ void ncclLocalReduceSumCopy(Coop coop, int nSrc, T* srcBase, size_t srcDispl, int nDst,
                                       T* dstBase, size_t dstDispl, IntCount count) {
  rcclx_nccl_device::reduceCopy<T>(coop, rcclx_nccl_device::Strided<T>{srcBase, srcDispl}, nSrc,
                                   rcclx_nccl_device::Strided<T>{dstBase, dstDispl}, nDst,
                                   rcclx_nccl_device::Sum<T>(), count);
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_REDUCE_COPY_H_ */
