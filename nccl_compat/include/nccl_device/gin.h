/*
 * nccl_device/gin.h of RCCLX's NCCL-ABI library: NCCL's GPU-initiated networking (GIN) from
 * kernels: the GIN context (ncclGin, a context over a set of back-ends: put, get, signal, flush,
 * signals and counters), its C-style form (ncclGin_C and the ncclGin* functions), the actions a
 * put or signal carries, and the host calls asking for GIN scratch buffers. RCCLX has no GIN
 * back-end: each device object stops the kernel with a message when it is made, each device
 * function when it is called, and the host calls refuse first (ncclDevCommCreate for GIN
 * signals and counters, the requirement calls below).
 */
#ifndef RCCLX_NCCL_DEVICE_GIN_H_
#define RCCLX_NCCL_DEVICE_GIN_H_

#include "core.h"
#include "net_device.h"
#include "ptr.h"

#if defined(RCCLX_NCCL_HAVE_CUDA_RUNTIME) && defined(__has_include)
#if __has_include(<cuda.h>)
/* As NCCL's device headers, which describe GIN memory with the driver API's types. */
#include <cuda.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif
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

/* What a signal does to its value: add one, or add the operand. */
typedef enum ncclGinSignalOp_t { ncclGinSignalInc = 0, ncclGinSignalAdd = 1 } ncclGinSignalOp_t;

/* Bits of the optFlags argument of GIN operations. */
enum ncclGinOptFlags {
  ncclGinOptFlagsDefault = 0,
  ncclGinOptFlagsMaySkipCreditCheck = 1 << 0,
  ncclGinOptFlagsAggregateRequests = 1 << 1
};

/* The set of GIN back-ends a context serves, one bit per ncclNetDeviceType: every GIN one. */
#define NCCL_GIN_BACKEND_MASK_ALL                                                              \
  ((1u << (unsigned)NCCL_NET_DEVICE_GIN_PROXY) | (1u << (unsigned)NCCL_NET_DEVICE_GIN_GDAKI) | \
   (1u << (unsigned)NCCL_NET_DEVICE_GIN_GPI) | (1u << (unsigned)NCCL_NET_DEVICE_GIN_EFA_GDA))

#if defined(__CUDACC__)
#include <cuda/atomic>

/* Which threads share a GIN context's network resources. */
enum ncclGinResourceSharingMode : uint8_t {
  NCCL_GIN_RESOURCE_SHARING_GPU = 0,
  NCCL_GIN_RESOURCE_SHARING_CTA = 1,
  NCCL_GIN_RESOURCE_SHARING_THREAD = 2
};

/* Shared memory a block lends a GIN operation for its descriptor (ncclGin_DescriptorSmem
 * points at one). */
struct ncclGinDescriptorSmem {
  alignas(16) char space[64];
};

/* ---- Actions of a put or signal, and descriptor and buffer tags --------------------------- *
 * Remote actions update a signal of the peer when the data has landed: Strong ones also order
 * every earlier put of the context to that peer, Weak ones only their own; the unqualified
 * names are NCCL's older spellings of the Strong ones. VA signals live in a window instead of
 * the communicator's signal table. The local actions count the source buffers released. */
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
struct ncclGin_StrongVASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_WeakVASignalInc {
  ncclWindow_t signalWindow;
  size_t signalOffset;
};
struct ncclGin_VASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_StrongVASignalAdd {
  ncclWindow_t signalWindow;
  size_t signalOffset;
  uint64_t value;
};
struct ncclGin_WeakVASignalAdd {
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
struct ncclGin_DescriptorSmem {
  ncclGinDescriptorSmem* descriptor;
};
/* What memory backs a buffer: device memory, host (NUMA) memory or both. */
struct ncclGin_SegmentDevice {};
struct ncclGin_SegmentMixed {};
struct ncclGin_SegmentHostNuma {};

/* ---- The GIN context ----------------------------------------------------------------------- *
 * Context `contextIndex` of a device communicator, over the back-ends of backendMask. Every
 * member is NCCL's; none can work here, so the constructor stops the kernel. */
template <unsigned backendMask>
struct ncclGin_BackendMask {
  ncclDevComm const& comm;
  uint32_t nConnections : 8, connectionId : 8, _ginBackend : 8;
  uint32_t contextId;
  ncclGinResourceSharingMode resourceSharingMode;

  __device__ ncclGin_BackendMask(ncclDevComm const& devComm, int contextIndex,
                                 ncclGinResourceSharingMode sharing = NCCL_GIN_RESOURCE_SHARING_GPU)
      : comm(devComm),
        nConnections(0),
        connectionId(0),
        _ginBackend(0),
        contextId(static_cast<uint32_t>(contextIndex)),
        resourceSharingMode(sharing),
        _ginHandle(nullptr),
        _signalShadows(nullptr) {
    rcclx_nccl_device::noGin("ncclGin");
  }

  __device__ bool _supportsStrongSignal() const {
    rcclx_nccl_device::noGin("ncclGin::_supportsStrongSignal");
  }

  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  __device__ void flushAsync(ncclTeam, uint32_t, ncclGinRequest_t*, Coop = ncclCoopThread{},
                             uint32_t = ncclGinOptFlagsDefault,
                             DescriptorSmem = ncclGin_None{}) const {
    rcclx_nccl_device::noGin("ncclGin::flushAsync");
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  __device__ void wait(ncclGinRequest_t&, Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                       cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::wait");
  }
  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None>
  __device__ ncclResult_t wait(ncclGinRequest_t&, Coop, DescriptorSmem, cuda::memory_order,
                               uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::wait");
  }

  template <typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  __device__ void get(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                      Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                      uint32_t = ncclGinOptFlagsDefault,
                      SegmentType = ncclGin_SegmentDevice{}) const {
    rcclx_nccl_device::noGin("ncclGin::get");
  }

  /* put(team, peer, dstWindow, dstOffset, srcWindow, srcOffset, bytes, remoteAction,
   * localAction, coop, descriptor, givenRelease, requiredRelease, optFlags, segment) */
  template <typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  __device__ void put(ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t, size_t, size_t,
                      RemoteAction = ncclGin_None{}, LocalAction = ncclGin_None{},
                      Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                      cuda::thread_scope = cuda::thread_scope_thread,
                      cuda::thread_scope = cuda::thread_scope_device,
                      uint32_t = ncclGinOptFlagsDefault,
                      SegmentType = ncclGin_SegmentDevice{}) const {
    rcclx_nccl_device::noGin("ncclGin::put");
  }
  /* The same, nElts elements from one symmetric pointer to another. */
  template <typename T, typename RemoteAction = ncclGin_None, typename LocalAction = ncclGin_None,
            typename Coop = ncclCoopThread, typename DescriptorSmem = ncclGin_None,
            typename SegmentType = ncclGin_SegmentDevice>
  __device__ void put(ncclTeam, int, ncclSymPtr<T>, ncclSymPtr<T>, size_t,
                      RemoteAction = ncclGin_None{}, LocalAction = ncclGin_None{},
                      Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                      cuda::thread_scope = cuda::thread_scope_thread,
                      cuda::thread_scope = cuda::thread_scope_device,
                      uint32_t = ncclGinOptFlagsDefault,
                      SegmentType = ncclGin_SegmentDevice{}) const {
    rcclx_nccl_device::noGin("ncclGin::put");
  }

  /* A value of up to 8 bytes written into the peer's window. */
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  __device__ void putValue(ncclTeam, int, ncclWindow_t, size_t, T, RemoteAction = ncclGin_None{},
                           Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                           cuda::thread_scope = cuda::thread_scope_thread,
                           cuda::thread_scope = cuda::thread_scope_device,
                           uint32_t = ncclGinOptFlagsDefault) const {
    rcclx_nccl_device::noGin("ncclGin::putValue");
  }
  template <typename T, typename RemoteAction = ncclGin_None, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  __device__ void putValue(ncclTeam, int, ncclSymPtr<T>, T, RemoteAction = ncclGin_None{},
                           Coop = ncclCoopThread{}, DescriptorSmem = ncclGin_None{},
                           cuda::thread_scope = cuda::thread_scope_thread,
                           cuda::thread_scope = cuda::thread_scope_device,
                           uint32_t = ncclGinOptFlagsDefault) const {
    rcclx_nccl_device::noGin("ncclGin::putValue");
  }

  template <typename RemoteAction, typename Coop = ncclCoopThread,
            typename DescriptorSmem = ncclGin_None>
  __device__ void signal(ncclTeam, int, RemoteAction, Coop = ncclCoopThread(),
                         DescriptorSmem = ncclGin_None{},
                         cuda::thread_scope = cuda::thread_scope_thread,
                         cuda::thread_scope = cuda::thread_scope_device,
                         uint32_t = ncclGinOptFlagsDefault) const {
    rcclx_nccl_device::noGin("ncclGin::signal");
  }

  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  __device__ void flush(Coop, cuda::memory_order = cuda::memory_order_acquire,
                        DescriptorSmem = ncclGin_None{}) const {
    rcclx_nccl_device::noGin("ncclGin::flush");
  }
  template <typename Coop, typename DescriptorSmem = ncclGin_None>
  __device__ ncclResult_t flush(Coop, cuda::memory_order, DescriptorSmem, uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::flush");
  }

  /* Counters (56 bits) and signals compare "rolling": a wait ends once the value reached is at
   * or past `least` modulo 2^bits. */
  __device__ uint64_t readCounter(ncclGinCounter_t, int = 56,
                                  cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::readCounter");
  }
  template <typename Coop>
  __device__ void waitCounter(Coop, ncclGinCounter_t, uint64_t, int = 56,
                              cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::waitCounter");
  }
  template <typename Coop>
  __device__ ncclResult_t waitCounter(Coop, ncclGinCounter_t, uint64_t, int, cuda::memory_order,
                                      uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::waitCounter");
  }

  __device__ uint64_t* getSignalShadowPtr(ncclGinSignal_t) const {
    rcclx_nccl_device::noGin("ncclGin::getSignalShadowPtr");
  }
  __device__ void increaseSignalShadow(ncclGinSignal_t, uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::increaseSignalShadow");
  }
  __device__ uint64_t readSignal(ncclGinSignal_t, int = 64,
                                 cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::readSignal");
  }
  __device__ uint64_t readSignal(ncclWindow_t, size_t, int = 64,
                                 cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::readSignal");
  }
  template <typename Coop>
  __device__ void waitSignal(Coop, ncclGinSignal_t, uint64_t, int = 64,
                             cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignal");
  }
  template <typename Coop>
  __device__ ncclResult_t waitSignal(Coop, ncclGinSignal_t, uint64_t, int, cuda::memory_order,
                                     uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignal");
  }
  template <typename Coop>
  __device__ void waitSignal(Coop, ncclWindow_t, size_t, uint64_t, int = 64,
                             cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignal");
  }
  template <typename Coop>
  __device__ ncclResult_t waitSignal(Coop, ncclWindow_t, size_t, uint64_t, int, cuda::memory_order,
                                     uint64_t) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignal");
  }
  template <typename Coop>
  __device__ void waitSignalMeetShadow(Coop, ncclGinSignal_t, int = 64,
                                       cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignalMeetShadow");
  }
  template <typename Coop, typename Uint>
  __device__ void waitSignalFollowShadow(Coop, ncclGinSignal_t, Uint, Uint*, Uint*, int = 64,
                                         cuda::memory_order = cuda::memory_order_acquire) const {
    rcclx_nccl_device::noGin("ncclGin::waitSignalFollowShadow");
  }

  __device__ void resetCounter(ncclGinCounter_t) const {
    rcclx_nccl_device::noGin("ncclGin::resetCounter");
  }
  __device__ void resetSignal(ncclGinSignal_t) const {
    rcclx_nccl_device::noGin("ncclGin::resetSignal");
  }
  __device__ void resetSignal(ncclWindow_t, size_t) const {
    rcclx_nccl_device::noGin("ncclGin::resetSignal");
  }

  /* The back-end's state, as NCCL lays the context out. */
  void* _ginHandle;
  uint64_t* _signalShadows;
};

/* A context over one back-end, and the usual one over all of them. */
template <ncclNetDeviceType backend>
using ncclGin_BackendOne = ncclGin_BackendMask<(1u << static_cast<int>(backend))>;
using ncclGin = ncclGin_BackendMask<NCCL_GIN_BACKEND_MASK_ALL>;

/* ---- The C-style form ---------------------------------------------------------------------- *
 * For code that is not a template: the context names its back-ends at run time and every
 * operation is a function taking it. */
struct ncclGin_C {
  ncclDevComm const& comm;
  uint32_t nConnections : 8, connectionId : 8, _ginBackend : 8;
  uint32_t contextId;
  ncclGinResourceSharingMode resourceSharingMode;
  void* _ginHandle;
  uint64_t* _signalShadows;
  unsigned backendMask;

  __device__ ncclGin_C(ncclDevComm const& devComm, unsigned backends, int contextIndex,
                       ncclGinResourceSharingMode sharing = NCCL_GIN_RESOURCE_SHARING_GPU)
      : comm(devComm),
        nConnections(0),
        connectionId(0),
        _ginBackend(0),
        contextId(static_cast<uint32_t>(contextIndex)),
        resourceSharingMode(sharing),
        _ginHandle(nullptr),
        _signalShadows(nullptr),
        backendMask(backends) {
    rcclx_nccl_device::noGin("ncclGin_C");
  }
};

/* Makes *net in place (its storage is the caller's). */
__device__ inline void ncclGin_C_init(ncclGin_C*, unsigned, ncclDevComm const&, int) {
  rcclx_nccl_device::noGin("ncclGin_C_init");
}
__device__ inline void ncclGin_C_initWithResourceSharingMode(ncclGin_C*, unsigned,
                                                             ncclDevComm const&, int,
                                                             ncclGinResourceSharingMode) {
  rcclx_nccl_device::noGin("ncclGin_C_initWithResourceSharingMode");
}
/* put(team, peer, dst window, offset, src window, offset, bytes, isSignal, signal, signalOp,
 * signal operand, isCounter, counter, coop, isDescriptor, descriptor, givenRelease,
 * requiredRelease[, optFlags]) */
__device__ inline void ncclGinPut(ncclGin_C*, ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t,
                                  size_t, size_t, bool, ncclGinSignal_t, ncclGinSignalOp_t,
                                  uint64_t, bool, ncclGinCounter_t, ncclCoopAny, bool,
                                  ncclGinDescriptorSmem*, cuda::thread_scope, cuda::thread_scope) {
  rcclx_nccl_device::noGin("ncclGinPut");
}
__device__ inline void ncclGinPut_v2(ncclGin_C*, ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t,
                                     size_t, size_t, bool, ncclGinSignal_t, ncclGinSignalOp_t,
                                     uint64_t, bool, ncclGinCounter_t, ncclCoopAny, bool,
                                     ncclGinDescriptorSmem*, cuda::thread_scope, cuda::thread_scope,
                                     uint32_t) {
  rcclx_nccl_device::noGin("ncclGinPut_v2");
}
__device__ inline void ncclGinGet(ncclGin_C*, ncclTeam, int, ncclWindow_t, size_t, ncclWindow_t,
                                  size_t, size_t, ncclCoopAny, bool, ncclGinDescriptorSmem*,
                                  uint32_t) {
  rcclx_nccl_device::noGin("ncclGinGet");
}
__device__ inline void ncclGinSignal(ncclGin_C*, ncclTeam, int, bool, ncclGinSignal_t,
                                     ncclGinSignalOp_t, uint64_t, ncclCoopAny, bool,
                                     ncclGinDescriptorSmem*, cuda::thread_scope,
                                     cuda::thread_scope) {
  rcclx_nccl_device::noGin("ncclGinSignal");
}
__device__ inline void ncclGinSignal_v2(ncclGin_C*, ncclTeam, int, bool, ncclGinSignal_t,
                                        ncclGinSignalOp_t, uint64_t, ncclCoopAny, bool,
                                        ncclGinDescriptorSmem*, cuda::thread_scope,
                                        cuda::thread_scope, uint32_t) {
  rcclx_nccl_device::noGin("ncclGinSignal_v2");
}
__device__ inline void ncclGinPutValue(ncclGin_C*, ncclTeam, int, ncclWindow_t, size_t, uint64_t,
                                       size_t, bool, ncclGinSignal_t, ncclGinSignalOp_t, uint64_t,
                                       ncclCoopAny, bool, ncclGinDescriptorSmem*,
                                       cuda::thread_scope, cuda::thread_scope) {
  rcclx_nccl_device::noGin("ncclGinPutValue");
}
__device__ inline void ncclGinPutValue_v2(ncclGin_C*, ncclTeam, int, ncclWindow_t, size_t, uint64_t,
                                          size_t, bool, ncclGinSignal_t, ncclGinSignalOp_t,
                                          uint64_t, ncclCoopAny, bool, ncclGinDescriptorSmem*,
                                          cuda::thread_scope, cuda::thread_scope, uint32_t) {
  rcclx_nccl_device::noGin("ncclGinPutValue_v2");
}
__device__ inline void ncclGinFlush(ncclGin_C*, ncclCoopAny, cuda::memory_order) {
  rcclx_nccl_device::noGin("ncclGinFlush");
}
__device__ inline uint64_t ncclGinReadCounter(ncclGin_C*, ncclGinCounter_t, int,
                                              cuda::memory_order) {
  rcclx_nccl_device::noGin("ncclGinReadCounter");
}
__device__ inline void ncclGinWaitCounter(ncclGin_C*, ncclCoopAny, ncclGinCounter_t, uint64_t, int,
                                          cuda::memory_order) {
  rcclx_nccl_device::noGin("ncclGinWaitCounter");
}
__device__ inline uint64_t ncclGinReadSignal(ncclGin_C*, ncclGinSignal_t, int, cuda::memory_order) {
  rcclx_nccl_device::noGin("ncclGinReadSignal");
}
__device__ inline void ncclGinWaitSignal(ncclGin_C*, ncclCoopAny, ncclGinSignal_t, uint64_t, int,
                                         cuda::memory_order) {
  rcclx_nccl_device::noGin("ncclGinWaitSignal");
}
__device__ inline void ncclGinResetCounter(ncclGin_C*, ncclGinCounter_t) {
  rcclx_nccl_device::noGin("ncclGinResetCounter");
}
__device__ inline void ncclGinResetSignal(ncclGin_C*, ncclGinSignal_t) {
  rcclx_nccl_device::noGin("ncclGinResetSignal");
}
__device__ inline uint64_t* ncclGinGetSignalShadowPtr(ncclGin_C*, ncclGinSignal_t) {
  rcclx_nccl_device::noGin("ncclGinGetSignalShadowPtr");
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_GIN_H_ */
