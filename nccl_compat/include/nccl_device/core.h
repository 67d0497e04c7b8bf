/*
 * nccl_device/core.h of RCCLX's NCCL-ABI library: the host-visible types of NCCL's device API
 * (teams, device communicators, their requirements, communicator properties), the host calls
 * that create and query them, and the device functions on teams and windows.
 *
 * Names, field order and initializer macros are those of NCCL 2.31, so code written for NCCL's
 * device API compiles unchanged. RCCLX creates no device communicators: ncclDevCommCreate
 * returns ncclInvalidUsage naming the requirements it cannot meet, and
 * ncclCommQueryProperties reports deviceApiSupport = false. The host team calls, the pure
 * team arithmetic and the queries of this rank's own window memory work;
 * every device function that would reach peer memory through a window or a device
 * communicator stops the kernel with a message (nccl_device/unsupported.h).
 *
 * This part compiles as C, as C++ and as CUDA; the device functions exist only under nvcc.
 */
#ifndef RCCLX_NCCL_DEVICE_CORE_H_
#define RCCLX_NCCL_DEVICE_CORE_H_

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "../nccl.h"
#include "coop.h"
#include "unsupported.h"
#include "utility.h"

/* Functions usable on the host and, under nvcc, in kernels. */
#if defined(__CUDACC__)
#define RCCLX_NCCL_HOST_DEVICE static inline __host__ __device__
#else
#define RCCLX_NCCL_HOST_DEVICE static inline
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Handles and small types --------------------------------------------------------------- */

typedef struct ncclDevComm ncclDevComm_t;
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclTeam ncclTeam_t;
/* The window object behind ncclWindow_t stays private to the library. */
typedef struct ncclWindow_vidmem ncclWindow_vidmem_t;

/* Index of a resource buffer inside a device communicator. */
typedef uint32_t ncclDevResourceHandle;
typedef ncclDevResourceHandle ncclDevResourceHandle_t;
/* GIN signals and counters, numbered from 0 within a device communicator. */
typedef uint32_t ncclGinSignal_t;
typedef uint32_t ncclGinCounter_t;
/* An outstanding GIN operation (flushAsync / wait). */
typedef struct {
  uint64_t opaque[2];
} ncclGinRequest_t;
/* A logical endpoint of the collective fabric transport (CFT). */
typedef uint32_t ncclCftLeId;
typedef ncclCftLeId ncclCftLeId_t;
#define NCCL_LE_ID_INVALID ((ncclCftLeId_t) - 1)

/* A team: the ranks base + i * stride for i in [0, nRanks), this rank being number `rank` of
 * them. Teams are values; the functions below compute them without communication. */
struct ncclTeam {
  int nRanks, rank, stride;
};

/* The multicast address of a multimem group. */
typedef struct ncclMultimemHandle {
  void* mcBasePtr;
} ncclMultimemHandle_t;

/* Where a device communicator keeps the state of its barriers. */
typedef struct ncclLsaBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
} ncclLsaBarrierHandle_t;
typedef struct ncclGinBarrierHandle {
  ncclGinSignal_t signal0;
  ncclDevResourceHandle_t unused;
} ncclGinBarrierHandle_t;
typedef struct ncclCftBarrierHandle {
  ncclDevResourceHandle_t bufHandle;
  int nBarriers;
} ncclCftBarrierHandle_t;
typedef struct ncclLLA2AHandle {
  ncclDevResourceHandle_t bufHandle;
  uint32_t nSlots;
} ncclLLA2AHandle_t;

/* How a device communicator connects its ranks for GIN. */
typedef enum {
  NCCL_GIN_CONNECTION_NONE,
  NCCL_GIN_CONNECTION_FULL,
  NCCL_GIN_CONNECTION_RAIL,
  NCCL_GIN_CONNECTION_CUSTOM_STRIDE
} ncclGinConnectionType_t;

/* GIN back-ends. NONE asks for none in particular (requirements) or reports none (properties);
 * RCCLX has none of the others. */
typedef enum {
  NCCL_GIN_TYPE_NONE = 0,
  NCCL_GIN_TYPE_PROXY = 2,
  NCCL_GIN_TYPE_GDAKI = 3,
  NCCL_GIN_TYPE_GPI = 4,
  NCCL_GIN_TYPE_EFA_GDA = 5,
  NCCL_GIN_MAX_TYPES = 6
} ncclGinType_t;

typedef enum {
  NCCL_CFT_TEAM_FLAT,
  NCCL_CFT_TEAM_HIER_MULTIMEM,
  NCCL_CFT_TEAM_HIER_LSA
} ncclCftTeamMode_t;

/* Bits of ncclDevCommRequirements.cftCaps. */
typedef enum { NCCL_CFT_NONE = 0x0, NCCL_CFT = 0x1, NCCL_CFT_MULTIMEM = 0x2 } ncclCftCap_t;

#define NCCL_GIN_MAX_CONNECTIONS 4
#define NCCL_GIN_MAX_ACTIVE_BACKENDS 4

/* ---- Requirements of a device communicator ------------------------------------------------- */

/* A buffer (and GIN signals / counters) a device communicator is to allocate; a
 * NULL-terminated list through next. */
typedef struct ncclDevResourceRequirements {
  struct ncclDevResourceRequirements* next;
  size_t bufferSize, bufferAlign;
  ncclDevResourceHandle_t* outBufferHandle;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinSignal_t* outGinSignalStart;
  ncclGinCounter_t* outGinCounterStart;
} ncclDevResourceRequirements_t;

/* A team a device communicator is to set up (a multimem group over it, say); a NULL-terminated
 * list through next. */
typedef struct ncclTeamRequirements {
  struct ncclTeamRequirements* next;
  ncclTeam_t team;
  bool multimem;
  ncclMultimemHandle_t* outMultimemHandle;
} ncclTeamRequirements_t;

/* What ncclDevCommCreate is asked to provide (NCCL 2.31's layout), versioned by its leading
 * size / magic / version fields: initialise it with NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER,
 * then set the counts wanted. A struct cleared to zero (as code written for NCCL 2.28 does) is
 * read with this header's layout. */
struct ncclDevCommRequirements {
  size_t size;
  unsigned int magic;
  unsigned int version;

  ncclDevResourceRequirements_t* resourceRequirementsList;
  ncclTeamRequirements_t* teamRequirementsList;

  bool lsaMultimem; /* a multimem group over the LSA team */

  int barrierCount; /* barriers over the world team (LSA and GIN together) */
  int lsaBarrierCount;
  int railGinBarrierCount;

  int lsaLLA2ABlockCount, lsaLLA2ASlotCount;

  bool ginForceEnable;
  int ginContextCount;
  int ginSignalCount;
  int ginCounterCount;
  ncclGinConnectionType_t ginConnectionType;
  bool ginExclusiveContexts;
  int ginQueueDepth;
  int ginTrafficClass;
  int worldGinBarrierCount;
  bool ginStrongSignalsRequired;
  bool ginVaSignalsRequired;
  int ginCustomStride;
  ncclGinType_t ginType;
  bool useRuntimeVersion;

  int cftCaps; /* ncclCftCap_t bits */
  int cftBarrierCount;
};

#define NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER \
  {sizeof(ncclDevCommRequirements_t),          \
   NCCL_API_MAGIC,                             \
   NCCL_VERSION_CODE,                          \
   NULL,                                       \
   NULL,                                       \
   false,                                      \
   0,                                          \
   0,                                          \
   0,                                          \
   0,                                          \
   0,                                          \
   false,                                      \
   4,                                          \
   0,                                          \
   0,                                          \
   NCCL_GIN_CONNECTION_NONE,                   \
   false,                                      \
   0,                                          \
   NCCL_CONFIG_UNDEF_INT,                      \
   0,                                          \
   true,                                       \
   true,                                       \
   1,                                          \
   NCCL_GIN_TYPE_NONE,                         \
   false,                                      \
   NCCL_CFT_NONE,                              \
   0}

/* ---- Communicator properties --------------------------------------------------------------- */

/* What ncclCommQueryProperties reports (NCCL 2.31's layout), versioned like
 * ncclDevCommRequirements: initialise it with NCCL_COMM_PROPERTIES_INITIALIZER (the versioned
 * header, every other field zero until the query fills it). */
typedef struct ncclCommProperties {
  size_t size;
  unsigned int magic;
  unsigned int version;

  int rank;
  int nRanks;
  int cudaDev; /* -1: a host-memory communicator */
  int nvmlDev; /* -1: not known */
  bool deviceApiSupport;
  bool multimemSupport;
  ncclGinType_t ginType;
  int nLsaTeams;
  bool hostRmaSupport;
  ncclGinType_t railedGinType;
  uint64_t commHash;
  int ginMinStride;
  ncclGinConnectionType_t ginConnectionType;
  bool ginSupport[64]; /* indexed by ncclGinType_t */
  size_t devCommRuntimeVersionSize;
} ncclCommProperties_t;

#define NCCL_COMM_PROPERTIES_INITIALIZER \
  {sizeof(ncclCommProperties_t),         \
   NCCL_API_MAGIC,                       \
   NCCL_VERSION_CODE,                    \
   0,                                    \
   0,                                    \
   0,                                    \
   0,                                    \
   false,                                \
   false,                                \
   NCCL_GIN_TYPE_NONE,                   \
   0,                                    \
   false,                                \
   NCCL_GIN_TYPE_NONE,                   \
   0,                                    \
   0,                                    \
   NCCL_GIN_CONNECTION_NONE,             \
   {false},                              \
   0}

/* ---- The device communicator --------------------------------------------------------------- */

typedef struct ncclDevCommWindowTable* ncclDevCommWindowTable_t;
#ifdef __cplusplus
/* The windows of a device communicator, as kernels look them up by address: blocks of 32
 * entries chained through next. RCCLX makes no device communicator, so none exists. */
struct ncclDevCommWindowTable {
  struct Entry {
    uintptr_t base, size;
    ncclWindow_t window;
  } entries[32];
  struct ncclDevCommWindowTable* next;
};
#endif

/* The fields of a window a device communicator keeps inline for its own resource buffers. */
typedef struct ncclResourceWindow_vidmem {
  char* lsaFlatBase;
  uint32_t stride4G;
  uint32_t mcOffset4K;
} ncclResourceWindow_vidmem_t;

/* What a kernel receives (by value) to reach its peers: NCCL 2.31's fields, in its order.
 * Kernels read rank, nRanks, lsaRank, lsaSize and pass the handles (lsaBarrier, lsaMultimem) to
 * the device API; the other fields are the library's. RCCLX's ncclDevCommCreate makes none. */
struct ncclDevComm {
  unsigned int magic;
  unsigned int version;

  int rank, nRanks;
  uint32_t nRanks_rcp32;
  int lsaRank, lsaSize;
  uint32_t lsaSize_rcp32;

  ncclDevCommWindowTable_t windowTable;

  ncclWindow_t resourceWindow;
  ncclResourceWindow_vidmem_t resourceWindow_inlined;

  ncclGinBarrierHandle_t hybridDenseGinBarrier;

  ncclMultimemHandle_t lsaMultimem;
  ncclLsaBarrierHandle_t lsaBarrier;
  ncclGinBarrierHandle_t railGinBarrier;

  uint8_t ginConnectionCount;
  uint8_t backendIndex;
  uint8_t ginNetDeviceTypes[NCCL_GIN_MAX_CONNECTIONS];
  void* ginHandles[NCCL_GIN_MAX_CONNECTIONS];
  int ginSignalCount;
  int ginCounterCount;
  uint64_t* ginSignalShadows;
  uint32_t ginContextCount;
  int ginConnectionStride;
  int ginContextStride;
  bool ginStrongLegacySignals;

  uint32_t* abortFlag;

  ncclLsaBarrierHandle_t hybridLsaBarrier;
  ncclGinBarrierHandle_t hybridRailGinBarrier;
  ncclGinBarrierHandle_t worldGinBarrier;
  uint32_t ginConnectionStride_rcp32;

  int cftRank, cftSize;
  int cftMultimemRank, cftMultimemSize;
  uint32_t cftMultimemSize_rcp32;
  ncclCftLeId ucLeId;
  ncclCftLeId mcLeId;
  ncclCftBarrierHandle_t cftBarrier;
  ncclCftBarrierHandle_t cftMultimemBarrier;
};

/* ---- Host calls ------------------------------------------------------------------------------ */

/* Fills *props (initialised with NCCL_COMM_PROPERTIES_INITIALIZER; only the fields its size
 * covers are written): rank, nRanks, cudaDev (-1 for a host-memory communicator), nvmlDev
 * (-1), nLsaTeams (nRanks: no rank reaches another's memory through the device API), commHash
 * (0); every device-API capability false, GIN types NCCL_GIN_TYPE_NONE, and
 * devCommRuntimeVersionSize 0. ncclInvalidArgument for a struct without NCCL_API_MAGIC. */
ncclResult_t ncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);
ncclResult_t pncclCommQueryProperties(ncclComm_t comm, ncclCommProperties_t* props);

/* ncclDevCommCreate and ncclDevCommDestroy are declared in nccl.h. */

/* The teams of a communicator, as the host sees them; they agree with
 * ncclCommQueryProperties. The world is every rank. RCCLX gives kernels no access to peers'
 * memory, so the LSA team of every rank is the rank alone (lsaSize 1, nLsaTeams = nRanks) and
 * the rail team (the ranks holding this rank's place in every LSA team) is the world. RCCLX has
 * no collective fabric transport either: every CFT team is the rank alone too. A call that
 * cannot answer (comm not a live communicator, a mode out of range) returns the empty team
 * {nRanks 0, rank -1, stride 0} and leaves its reason in ncclGetLastError. */
ncclTeam_t ncclTeamWorld(ncclComm_t comm);
ncclTeam_t pncclTeamWorld(ncclComm_t comm);
ncclTeam_t ncclTeamLsa(ncclComm_t comm);
ncclTeam_t pncclTeamLsa(ncclComm_t comm);
ncclTeam_t ncclTeamRail(ncclComm_t comm);
ncclTeam_t pncclTeamRail(ncclComm_t comm);
#ifdef __cplusplus
ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT);
ncclTeam_t pncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT);
#else
ncclTeam_t ncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
ncclTeam_t pncclTeamCft(ncclComm_t comm, ncclCftTeamMode_t mode);
#endif
ncclTeam_t ncclTeamCftMultimem(ncclComm_t comm);
ncclTeam_t pncclTeamCftMultimem(ncclComm_t comm);
/* The world rank, and the LSA rank, of member `rank` of `team` (a team of this rank's, as the
 * calls above and the team arithmetic below make them). A member outside the world, or, for
 * ncclTeamRankToLsa, outside this rank's LSA team (any rank but this one), gives -1 and a last
 * error naming it. */
int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank);
int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);
int pncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank);

/* Addresses of window memory for kernels, asked on the host. The one RCCLX can give is this
 * rank's own: ncclGetLsaDevicePointer with lsaRank 0 and ncclGetPeerDevicePointer with peer =
 * this rank store the window's memory at `offset` (offset < the window's size) in *outPtr:
 * device memory for a window on device memory, host memory for one on host memory. Another
 * rank's memory (no kernel reaches peers), multimem and the CFT endpoint queries return
 * ncclInvalidUsage, a peer outside the communicator or an lsaRank outside the LSA team
 * ncclInvalidArgument; the last error names the call and why. */
ncclResult_t ncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                     void** outPtr);
ncclResult_t pncclGetLsaDevicePointer(ncclWindow_t window, size_t offset, int lsaRank,
                                      void** outPtr);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t pncclGetPeerDevicePointer(ncclWindow_t window, size_t offset, int peer, void** outPtr);
ncclResult_t ncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t pncclGetLsaMultimemDevicePointer(ncclWindow_t window, size_t offset, void** outPtr);
ncclResult_t ncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                          ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t pncclGetMultimemDevicePointer(ncclWindow_t window, size_t offset,
                                           ncclMultimemHandle_t multimem, void** outPtr);
ncclResult_t ncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                         size_t* leOffset);
ncclResult_t pncclGetMultimemDeviceLeInfo(ncclWindow_t window, size_t offset, ncclCftLeId* leId,
                                          size_t* leOffset);
ncclResult_t ncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
                                    ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t pncclGetCftDeviceLeInfo(ncclWindow_t window, size_t offset, int peerCft,
                                     ncclTeam_t cftTeam, ncclCftLeId* leId, size_t* leOffset);
ncclResult_t ncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
                                     ncclCftLeId* leId, size_t* leOffset);
ncclResult_t pncclGetPeerDeviceLeInfo(ncclWindow_t window, size_t offset, int peerWorld,
                                      ncclCftLeId* leId, size_t* leOffset);

/* ---- Team arithmetic (host and device) ---------------------------------------------------- */

/* Whether rank bPeer of team b belongs to team a (both teams of the calling rank). */
RCCLX_NCCL_HOST_DEVICE bool ncclTeamRankIsMember(ncclTeam_t a, ncclTeam_t b, int bPeer) {
  const int delta = (bPeer - b.rank) * b.stride;
  if (a.stride == 0 || delta % a.stride != 0) return false;
  const int index = a.rank + delta / a.stride;
  return index >= 0 && index < a.nRanks;
}

/* The number in team a of rank bPeer of team b (which must be a member of a). */
RCCLX_NCCL_HOST_DEVICE int ncclTeamRankToTeam(ncclTeam_t a, ncclTeam_t b, int bPeer) {
  return a.rank + (bPeer - b.rank) * b.stride / a.stride;
}

/* parent split into consecutive groups of innerSize ranks: the group of the calling rank. */
RCCLX_NCCL_HOST_DEVICE ncclTeam_t ncclTeamInnerFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = innerSize;
  t.rank = parent.rank % innerSize;
  t.stride = parent.stride;
  return t;
}

/* parent split into groups of innerSize ranks: the ranks at the caller's position in every
 * group. */
RCCLX_NCCL_HOST_DEVICE ncclTeam_t ncclTeamOuterFactor(ncclTeam_t parent, int innerSize) {
  ncclTeam_t t;
  t.nRanks = parent.nRanks / innerSize;
  t.rank = parent.rank / innerSize;
  t.stride = parent.stride * innerSize;
  return t;
}

/* The ranks of parent that subset (a team of the calling rank inside parent) leaves out, in
 * parent's order: the number in parent of the index-th of them (index in
 * [0, parent.nRanks - subset.nRanks)). */
RCCLX_NCCL_HOST_DEVICE int ncclTeamRankInDifference(ncclTeam_t parent, ncclTeam_t subset,
                                                    int index) {
  /* subset's members sit every `step` places of parent from `first` on. */
  int step = subset.stride / parent.stride;
  int first = parent.rank - subset.rank * step;
  if (step < 0) {
    step = -step;
    first -= (subset.nRanks - 1) * step;
  }
  if (index < first) return index; /* before the first member */
  const int pastFirst = index - first;
  const int holes = step - 1; /* non-members between two consecutive members */
  const int inside = (subset.nRanks - 1) * holes;
  if (pastFirst < inside) return first + 1 + (pastFirst / holes) * step + pastFirst % holes;
  return first + (subset.nRanks - 1) * step + 1 + (pastFirst - inside); /* after the last */
}

/* Byte offset of a resource buffer inside its device communicator's resource window (handles
 * count 128-byte units). */
RCCLX_NCCL_HOST_DEVICE size_t ncclGetResourceBufferOffset(ncclDevResourceHandle_t h) {
  return (size_t)h * 128u;
}

#ifdef __cplusplus
}
#endif

#if defined(__cplusplus)
/* Tags naming the world, LSA and rail teams of a device communicator. */
struct ncclTeamTagWorld {};
struct ncclTeamTagLsa {};
struct ncclTeamTagRail {};

template <typename T>
struct ncclSymPtr;
#endif

#if defined(__CUDACC__)
/* ---- Device: teams of a device communicator ------------------------------------------------ */

/* Every rank of the communicator. */
__device__ inline ncclTeam ncclTeamWorld(ncclDevComm const& comm) {
  return ncclTeam{comm.nRanks, comm.rank, 1};
}
/* The ranks whose memory this rank can load and store (consecutive world ranks). */
__device__ inline ncclTeam ncclTeamLsa(ncclDevComm const& comm) {
  return ncclTeam{comm.lsaSize, comm.lsaRank, 1};
}
/* The ranks at the caller's position in every LSA team. */
__device__ inline ncclTeam ncclTeamRail(ncclDevComm const& comm) {
  return ncclTeamOuterFactor(ncclTeamWorld(comm), comm.lsaSize);
}
/* The ranks reached through the collective fabric transport: all of them (FLAT), or those at
 * the caller's place in every multimem group (HIER_MULTIMEM) or LSA team (HIER_LSA). An
 * unknown mode gives the empty team. */
__device__ inline ncclTeam ncclTeamCft(ncclDevComm const& comm,
                                       ncclCftTeamMode_t mode = NCCL_CFT_TEAM_FLAT) {
  const ncclTeam flat{comm.cftSize, comm.cftRank, 1};
  switch (mode) {
    case NCCL_CFT_TEAM_FLAT: return flat;
    case NCCL_CFT_TEAM_HIER_MULTIMEM: return ncclTeamOuterFactor(flat, comm.cftMultimemSize);
    case NCCL_CFT_TEAM_HIER_LSA: return ncclTeamOuterFactor(flat, comm.lsaSize);
  }
  return ncclTeam{0, 0, 0};
}
/* The caller's multimem group inside the CFT team. */
__device__ inline ncclTeam ncclTeamCftMultimem(ncclDevComm const& comm) {
  return ncclTeam{comm.cftMultimemSize, comm.cftMultimemRank, 1};
}
/* World rank of rank `rank` of `team`. */
__device__ inline int ncclTeamRankToWorld(ncclDevComm const& comm, ncclTeam team, int rank) {
  return comm.rank + (rank - team.rank) * team.stride;
}
/* LSA rank of rank `rank` of `team` (which must lie inside the LSA team). */
__device__ inline int ncclTeamRankToLsa(ncclDevComm const& comm, ncclTeam team, int rank) {
  return comm.lsaRank + (rank - team.rank) * team.stride;
}

/* ---- Device: window addresses -------------------------------------------------------------
 * NCCL resolves these through a window description in device memory, which RCCLX's windows do
 * not have: each stops the kernel with a message. */

__device__ inline void* ncclGetLocalPointer(ncclWindow_t, size_t) {
  rcclx_nccl_device::unsupported("ncclGetLocalPointer", "windows are not readable by kernels");
  return nullptr;
}
__device__ inline void* ncclGetLsaPointer(ncclWindow_t, size_t, int) {
  rcclx_nccl_device::unsupported("ncclGetLsaPointer", "windows are not readable by kernels");
  return nullptr;
}
__device__ inline void* ncclGetPeerPointer(ncclWindow_t, size_t, int) {
  rcclx_nccl_device::unsupported("ncclGetPeerPointer", "windows are not readable by kernels");
  return nullptr;
}
__device__ inline void* ncclGetPeerPointer(ncclWindow_t, size_t, ncclTeam, int) {
  rcclx_nccl_device::unsupported("ncclGetPeerPointer", "windows are not readable by kernels");
  return nullptr;
}
__device__ inline void* ncclGetMultimemPointer(ncclWindow_t, size_t, ncclMultimemHandle) {
  rcclx_nccl_device::unsupported("ncclGetMultimemPointer", "multimem is not provided");
  return nullptr;
}
__device__ inline void* ncclGetLsaMultimemPointer(ncclWindow_t, size_t, ncclDevComm const&) {
  rcclx_nccl_device::unsupported("ncclGetLsaMultimemPointer", "multimem is not provided");
  return nullptr;
}
__device__ inline void* ncclGetResourceBufferLocalPointer(ncclDevComm const&,
                                                          ncclDevResourceHandle) {
  rcclx_nccl_device::unsupported("ncclGetResourceBufferLocalPointer",
                                 "device communicators are not provided");
  return nullptr;
}
__device__ inline void* ncclGetResourceBufferLsaPointer(ncclDevComm const&, ncclDevResourceHandle,
                                                        int) {
  rcclx_nccl_device::unsupported("ncclGetResourceBufferLsaPointer",
                                 "device communicators are not provided");
  return nullptr;
}
__device__ inline void* ncclGetResourceBufferPeerPointer(ncclDevComm const&, ncclDevResourceHandle,
                                                         ncclTeam, int) {
  rcclx_nccl_device::unsupported("ncclGetResourceBufferPeerPointer",
                                 "device communicators are not provided");
  return nullptr;
}
__device__ inline void* ncclGetResourceBufferMultimemPointer(ncclDevComm const&,
                                                             ncclDevResourceHandle,
                                                             ncclMultimemHandle) {
  rcclx_nccl_device::noMultimem("ncclGetResourceBufferMultimemPointer");
}
__device__ inline void* ncclGetResourceBufferLsaMultimemPointer(ncclDevComm const&,
                                                                ncclDevResourceHandle) {
  rcclx_nccl_device::noMultimem("ncclGetResourceBufferLsaMultimemPointer");
}

/* ---- Device: CFT logical endpoints of window memory ----------------------------------------
 * The endpoint and offset through which the collective fabric transport reaches a window (or
 * a resource buffer) on a peer; RCCLX has no CFT. */

__device__ inline void ncclGetCftLeInfo(ncclWindow_t, size_t, int, ncclTeam, ncclDevComm const&,
                                        ncclCftLeId*, size_t*) {
  rcclx_nccl_device::noCft("ncclGetCftLeInfo");
}
__device__ inline void ncclGetPeerLeInfo(ncclWindow_t, size_t, int, ncclDevComm const&,
                                         ncclCftLeId*, size_t*) {
  rcclx_nccl_device::noCft("ncclGetPeerLeInfo");
}
__device__ inline void ncclGetMultimemLeInfo(ncclWindow_t, size_t, ncclDevComm const&, ncclCftLeId*,
                                             size_t*) {
  rcclx_nccl_device::noCft("ncclGetMultimemLeInfo");
}
__device__ inline void ncclGetResourceBufferCftLeInfo(ncclDevComm const&, ncclDevResourceHandle,
                                                      int, ncclCftLeId*, size_t*) {
  rcclx_nccl_device::noCft("ncclGetResourceBufferCftLeInfo");
}
__device__ inline void ncclGetResourceBufferPeerLeInfo(ncclDevComm const&, ncclDevResourceHandle,
                                                       int, ncclCftLeId*, size_t*) {
  rcclx_nccl_device::noCft("ncclGetResourceBufferPeerLeInfo");
}
__device__ inline void ncclGetResourceBufferMultimemLeInfo(ncclDevComm const&,
                                                           ncclDevResourceHandle, ncclCftLeId*,
                                                           size_t*) {
  rcclx_nccl_device::noCft("ncclGetResourceBufferMultimemLeInfo");
}

/* The window of the device communicator holding address ptr, looked up by every member of
 * coop together; RCCLX's device communicators do not exist, so neither does their table. */
template <typename Coop>
__device__ inline ncclWindow_t ncclFindWindow(Coop, ncclDevComm const&, void const*) {
  rcclx_nccl_device::noDevComm("ncclFindWindow");
}
#endif /* __CUDACC__ */

#endif /* RCCLX_NCCL_DEVICE_CORE_H_ */
