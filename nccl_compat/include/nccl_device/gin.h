/*
 * nccl_device/gin.h of RCCLX's NCCL-ABI library: NCCL's GPU-initiated networking (GIN) from
 * kernels: the ncclGin context (put, signal, flush, signals and counters), the GIN barrier and
 * the world barrier that combines an LSA and a GIN barrier, and the host calls asking for GIN
 * barriers and scratch buffers. RCCLX has no GIN back-end: each device object stops the kernel
 * with a message when it is made, and the host calls (like ncclDevCommCreate for GIN signals,
 * counters and barriers) refuse first.
 */
#ifndef RCCLX_NCCL_DEVICE_GIN_H_
#define RCCLX_NCCL_DEVICE_GIN_H_

#include "core.h"
#include "lsa_barrier.h"

#ifdef __cplusplus
extern "C" {
#endif
/* The resource a device communicator would need for nBarriers GIN barriers over team. RCCLX
 * has no GIN back-end, so it returns ncclInvalidUsage and writes neither output
 * (ncclInvalidArgument for a NULL output or a negative count). */
ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                             ncclGinBarrierHandle_t* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinBarrierCreateRequirement(ncclComm_t comm, ncclTeam_t team, int nBarriers,
                                              ncclGinBarrierHandle_t* outHandle,
                                              ncclDevResourceRequirements_t* outReq);

/* GIN scratch buffers of a device communicator: an outbox (per block, 2^size_log2 bytes staged
 * for puts) and an all-to-all inbox (per block, 2^size_log2 bytes from each peer of a team,
 * with a signal per peer). NCCL's library exports the two requirement calls below, but only its
 * Windows headers declare them and these handles; their layouts are NCCL's. */
typedef struct ncclGinOutboxHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t size_log2;
} ncclGinOutboxHandle;
typedef struct ncclGinInboxA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  ncclGinSignal_t signals;
  uint32_t size_log2;
  uint32_t nPeers_rcp32;
} ncclGinInboxA2AHandle;

/* The resources a device communicator would need for a GIN outbox of nBlocks blocks, or a GIN
 * all-to-all inbox of nBlocks blocks over the team peers. RCCLX has no GIN back-end, so each
 * returns ncclInvalidUsage and writes neither output (ncclInvalidArgument for a NULL output or
 * a negative nBlocks). */
ncclResult_t ncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                            ncclGinOutboxHandle* outHandle,
                                            ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinOutboxCreateRequirement(int nBlocks, int size_log2,
                                             ncclGinOutboxHandle* outHandle,
                                             ncclDevResourceRequirements_t* outReq);
ncclResult_t ncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                              ncclGinInboxA2AHandle* outHandle,
                                              ncclDevResourceRequirements_t* outReq);
ncclResult_t pncclGinInboxA2ACreateRequirement(ncclTeam_t peers, int nBlocks, int size_log2,
                                               ncclGinInboxA2AHandle* outHandle,
                                               ncclDevResourceRequirements_t* outReq);
#ifdef __cplusplus
}
#endif

#if defined(__CUDACC__)
#include <cuda/atomic>

/* What a GIN barrier drains before it returns: the peers' puts into this rank (Put), this
 * rank's gets (Get), or nothing (None; Relaxed is its older name). */
enum class ncclGinFenceLevel : uint32_t { None = 0, Put = 1u << 0, Get = 1u << 1, Relaxed = 0 };
__host__ __device__ constexpr ncclGinFenceLevel operator|(ncclGinFenceLevel a,
                                                          ncclGinFenceLevel b) {
  return static_cast<ncclGinFenceLevel>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
__host__ __device__ constexpr ncclGinFenceLevel operator&(ncclGinFenceLevel a,
                                                          ncclGinFenceLevel b) {
  return static_cast<ncclGinFenceLevel>(static_cast<uint32_t>(a) & static_cast<uint32_t>(b));
}

/* Actions a put or signal asks of the peer (remote) or of this rank (local) on completion. */
struct ncclGin_None {};
struct ncclGin_SignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_StrongSignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_WeakSignalInc {
  ncclGinSignal_t signal;
};
struct ncclGin_SignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_StrongSignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_WeakSignalAdd {
  ncclGinSignal_t signal;
  uint64_t value;
};
struct ncclGin_VASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_VASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_CounterInc {
  ncclGinCounter_t counter;
};
struct ncclGin_WeakCounterInc {
  ncclGinCounter_t counter;
};
/* Buffer kinds a put may name. */
struct ncclGin_SegmentDevice {};
struct ncclGin_SegmentMixed {};
struct ncclGin_SegmentHostNuma {};

namespace rcclx_nccl_device {
__device__ inline void noGin(const char* what) {
  unsupported(what, "GIN (GPU-initiated networking) is not provided");
}
}  // namespace rcclx_nccl_device

/* A GIN context of a device communicator. Trailing arguments NCCL's methods take beyond those
 * named (descriptors, release scopes, flags) are accepted. */
struct ncclGin {
  ncclDevComm const& comm;
  int contextIndex;

  template <typename... More>
  __device__ ncclGin(ncclDevComm const& devComm, int context, More...)
      : comm(devComm), contextIndex(context) {
    rcclx_nccl_device::noGin("ncclGin");
  }

  template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename... More>
  __device__ void put(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                      RemoteAction = RemoteAction{}, LocalAction = LocalAction{}, Coop = Coop{},
                      More...) const {
    rcclx_nccl_device::noGin("ncclGin::put");
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename... More>
  __device__ void putValue(ncclTeam, int, ncclWindow_t, size_t, T, RemoteAction = RemoteAction{},
                           Coop = Coop{}, More...) const {
    rcclx_nccl_device::noGin("ncclGin::putValue");
  }
  template <typename Coop = ncclCoopThread, typename... More>
  __device__ void get(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                      Coop = Coop{}, More...) const {
    rcclx_nccl_device::noGin("ncclGin::get");
  }
  template <typename RemoteAction, typename Coop = ncclCoopThread, typename... More>
  __device__ void signal(ncclTeam, int, RemoteAction, Coop = Coop{}, More...) const {
    rcclx_nccl_device::noGin("ncclGin::signal");
  }
  template <typename Coop, typename... More>
  __device__ void flush(Coop, More...) const {
    rcclx_nccl_device::noGin("ncclGin::flush");
  }
  __device__ uint64_t readSignal(ncclGinSignal_t, int = 64,
                                 cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::readSignal");
    return 0;
  }
  template <typename Coop, typename... More>
  __device__ void waitSignal(Coop, ncclGinSignal_t, uint64_t, More...) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignal");
  }
  __device__ void resetSignal(ncclGinSignal_t) const {
    rcclx_nccl_device::noGin("ncclGin::resetSignal");
  }
  __device__ uint64_t readCounter(ncclGinCounter_t, int = 56,
                                  cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::readCounter");
    return 0;
  }
  template <typename Coop, typename... More>
  __device__ void waitCounter(Coop, ncclGinCounter_t, uint64_t, More...) const {
    rcclx_nccl_device::noGin("ncclGin::waitCounter");
  }
  __device__ void resetCounter(ncclGinCounter_t) const {
    rcclx_nccl_device::noGin("ncclGin::resetCounter");
  }
};

/* Passed to a GIN barrier instead of an ncclGin: fence every context of the communicator. */
struct ncclGinAllContexts {
  ncclDevComm const& comm;
  __host__ __device__ constexpr ncclGinAllContexts(ncclDevComm const& devComm) : comm(devComm) {}
};

/* A barrier over a GIN-connected team (the world, or the rail team). */
template <typename Coop>
struct ncclGinBarrierSession {
  template <typename Gin, typename Team, typename... More>
  __device__ ncclGinBarrierSession(Coop, Gin const&, Team, More...) {
    rcclx_nccl_device::noGin("ncclGinBarrierSession");
  }
  ncclGinBarrierSession(ncclGinBarrierSession const&) = delete;
  __device__ void sync(Coop, cuda::memory_order,
                       ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    rcclx_nccl_device::noGin("ncclGinBarrierSession::sync");
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, ncclGinFenceLevel, uint64_t) {
    rcclx_nccl_device::noGin("ncclGinBarrierSession::sync");
    return ncclInvalidUsage;
  }
};

/* A barrier over the world (an LSA barrier within each host and a GIN barrier between hosts),
 * the LSA team or the rail team. */
template <typename Coop>
struct ncclBarrierSession {
  template <typename... More>
  __device__ ncclBarrierSession(Coop, ncclTeamTagWorld, ncclGin const&, More...) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  template <typename... More>
  __device__ ncclBarrierSession(Coop, ncclTeamTagRail, ncclGin const&, More...) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  template <typename... More>
  __device__ ncclBarrierSession(Coop, ncclTeamTagLsa, ncclDevComm const&, More...) {
    rcclx_nccl_device::unsupported("ncclBarrierSession", "LSA barriers are not provided");
  }
  template <typename... More>
  __device__ ncclBarrierSession(Coop, ncclTeam, ncclTeam, ncclGin const&, More...) {
    rcclx_nccl_device::noGin("ncclBarrierSession");
  }
  ncclBarrierSession(ncclBarrierSession const&) = delete;
  __device__ void sync(Coop, cuda::memory_order,
                       ncclGinFenceLevel = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get) {
    rcclx_nccl_device::noGin("ncclBarrierSession::sync");
  }
  __device__ ncclResult_t sync(Coop, cuda::memory_order, ncclGinFenceLevel, uint64_t) {
    rcclx_nccl_device::noGin("ncclBarrierSession::sync");
    return ncclInvalidUsage;
  }
};
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_GIN_H_ */
