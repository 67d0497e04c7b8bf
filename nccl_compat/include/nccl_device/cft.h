/*
 * nccl_device/cft.h of RCCLX's NCCL-ABI library: NCCL's collective fabric transport (CFT) from
 * kernels: ncclCft, a cooperative group's queue of asynchronous puts, gets and reductions
 * between shared memory and logical endpoints of peers' windows, the reduction tags it takes,
 * and the memory fence between the generic and the fabric proxies. RCCLX has no CFT: the
 * objects and functions compile and stop the kernel with a message when made or called.
 */
#ifndef RCCLX_NCCL_DEVICE_CFT_H_
#define RCCLX_NCCL_DEVICE_CFT_H_

#include "core.h"

#ifdef __cplusplus
/* The shared-memory barrier word an ncclCft completes its transfers on. */
struct ncclCftSmem {
  alignas(16) uint64_t bar;
};

/* Reductions a CFT transfer applies at its target, on elements of type T. */
template <typename T>
struct ncclCftOpSum {};
template <typename T>
struct ncclCftOpAnd {};
template <typename T>
struct ncclCftOpXor {};
template <typename T>
struct ncclCftOpOr {};
template <typename T>
struct ncclCftOpMin {};
template <typename T>
struct ncclCftOpMax {};
#endif /* __cplusplus */

#if defined(__CUDACC__)
#include <cuda/atomic>

/* The paths memory is reached by: ordinary loads and stores, or the fabric transport. */
enum class ncclMemProxyType : uint32_t { Generic = 1u << 0, Fabric = 1u << 1 };
/* How far a fence reaches: the block, or the system. */
enum class ncclMemFenceScope : uint32_t { Cta = 1u << 0, Sys = 1u << 1 };

/* Orders what `producer` wrote before the fence with what `consumer` reads after it. */
template <typename Coop>
__device__ inline void ncclMemFence(Coop, cuda::memory_order, ncclMemProxyType, ncclMemProxyType,
                                    ncclMemFenceScope) {
  rcclx_nccl_device::noCft("ncclMemFence");
}

/* A transfer queue of cooperative group Coop over cftSmem. Each operation is issued by the
 * members of an OpCoop (a part of Coop); sizes are bytes of shared memory moved. The *CpMask
 * forms restrict a transfer to the copies of cpMask, the Multimem ones target a multimem
 * endpoint. */
template <typename Coop>
struct ncclCft {
  __device__ ncclCft(Coop, ncclCftSmem&) { rcclx_nccl_device::noCft("ncclCft"); }
  ncclCft(ncclCft const&) = delete;

  template <typename OpCoop>
  __device__ void submit(OpCoop) {
    rcclx_nccl_device::noCft("ncclCft::submit");
  }
  template <typename OpCoop>
  __device__ void flushSmem(OpCoop) {
    rcclx_nccl_device::noCft("ncclCft::flushSmem");
  }
  template <typename OpCoop>
  __device__ void flush(OpCoop, bool* = nullptr, uint32_t* = nullptr) {
    rcclx_nccl_device::noCft("ncclCft::flush");
  }
  template <typename OpCoop>
  __device__ void put(OpCoop, ncclCftLeId, size_t, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::put");
  }
  template <typename OpCoop>
  __device__ void putCpMask(OpCoop, ncclCftLeId, size_t, void*, uint32_t, uint16_t) {
    rcclx_nccl_device::noCft("ncclCft::putCpMask");
  }
  template <typename OpCoop>
  __device__ void putMultimem(OpCoop, ncclCftLeId, size_t, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::putMultimem");
  }
  template <typename OpCoop>
  __device__ void putMultimemCpMask(OpCoop, ncclCftLeId, size_t, void*, uint32_t, uint16_t) {
    rcclx_nccl_device::noCft("ncclCft::putMultimemCpMask");
  }
  template <typename OpCoop>
  __device__ void get(OpCoop, ncclCftLeId, size_t, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::get");
  }
  template <typename RedOp, typename OpCoop>
  __device__ void red(OpCoop, ncclCftLeId, size_t, RedOp const&, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::red");
  }
  template <typename RedOp, typename OpCoop>
  __device__ void redCpMask(OpCoop, ncclCftLeId, size_t, RedOp const&, void*, uint32_t, uint16_t) {
    rcclx_nccl_device::noCft("ncclCft::redCpMask");
  }
  template <typename RedOp, typename OpCoop>
  __device__ void redMultimem(OpCoop, ncclCftLeId, size_t, RedOp const&, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::redMultimem");
  }
  template <typename RedOp, typename OpCoop>
  __device__ void redMultimemCpMask(OpCoop, ncclCftLeId, size_t, RedOp const&, void*, uint32_t,
                                    uint16_t) {
    rcclx_nccl_device::noCft("ncclCft::redMultimemCpMask");
  }
  template <typename RedOp, typename OpCoop>
  __device__ void pullRed(OpCoop, ncclCftLeId, size_t, RedOp const&, void*, uint32_t) {
    rcclx_nccl_device::noCft("ncclCft::pullRed");
  }
};
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_CFT_H_ */
