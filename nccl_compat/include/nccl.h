/*
 * nccl.h of RCCLX's NCCL-ABI library (libnccl.so.2, also installed as librccl.so.1).
 *
 * The types, enum values, struct layouts, macros and function signatures are those of NCCL
 * 2.31.2, so a program compiled against NCCL's own header runs on this library unchanged, and a
 * program compiled against this header runs on NCCL. Every function also exists as a p-prefixed
 * alias (pncclAllReduce, ...) for profilers. The header needs no CUDA installation: without
 * <cuda_runtime.h> it declares cudaStream_t as the CUDA runtime does (an opaque pointer), so
 * plain C programs on host memory compile against it. NCCL's device API (nccl_device.h) builds
 * on the types declared here.
 *
 * Behaviour specific to RCCLX (host-memory communicators, what each call maps onto) is
 * documented in docs/nccl_compat.rst.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(RCCLX_NCCL_NO_CUDA) && defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#define RCCLX_NCCL_HAVE_CUDA_RUNTIME 1
/* As NVIDIA's nccl.h: programs written against it use half, __nv_bfloat16 and the fp8 types
 * without including their headers. */
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#endif
#endif
#ifndef RCCLX_NCCL_HAVE_CUDA_RUNTIME
/* The CUDA runtime's own definition: a pointer to an opaque stream object (NULL: the default
 * stream). HIP's hipStream_t has the same representation. */
typedef struct CUstream_st* cudaStream_t;
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 31
#define NCCL_PATCH 2
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 23102
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

/* Identifies this header as RCCLX's (NCCL's own header does not define it). */
#define RCCLX_NCCL_COMPAT 1
/* RCCL's feature macros for the extensions declared at the end of this header. */
#define RCCL_ALLTOALLV 1
#define RCCL_GATHER_SCATTER 1

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles. */
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/* Names a bootstrap root; made by ncclGetUniqueId on one rank and passed to all others. It is
 * self-contained: it may be copied by value, sent over any channel and stored. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Result codes. This library never returns a value of ncclNumResults or above. ncclTimeout is
 * what NCCL's device API returns from a wait whose cycle budget ran out; RCCLX's host calls
 * report a peer that does not arrive in time (RCCLX_TIMEOUT_MS) as ncclRemoteError. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

/* Values of an ncclConfig_t field the caller left unset. */
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
/* ncclCommSplit's color for a rank that joins no new communicator (it gets NULL). */
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* The magic number of ncclConfig_t (checked by every function that reads one). */
#define NCCL_API_MAGIC 0xcafebeef

/* ncclCommWindowRegister flags. */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
/* One-sided operations on the window complete in the order they were issued (RCCLX's always
 * do: each peer's puts are applied in order). */
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* ncclConfig_t.CTAPolicy values. */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags. */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags: none is defined yet, so revokeFlags must be this. */
#define NCCL_REVOKE_DEFAULT 0x00

/* ncclConfig_t.hostCftMode: whether host collectives may use NCCL's collective fabric transport
 * (CFT). RCCLX has no CFT, so every value behaves as ncclHostCftDisable. */
typedef enum {
  ncclHostCftDefault = NCCL_CONFIG_UNDEF_INT,
  ncclHostCftEnable = 1,
  ncclHostCftDisable = 2,
  ncclHostCftFallback = 3
} ncclHostCftMode_t;

/* Per-communicator configuration, versioned by its leading size / magic / version fields: the
 * library reads only the fields the caller's struct holds (NCCL 2.27's struct is 72 bytes,
 * 2.28's 80, this 2.29-2.31 one 112; an older, shorter one or a newer, longer one works too).
 * Initialise it with NCCL_CONFIG_INITIALIZER, then set the fields wanted. */
typedef struct ncclConfig_v23100 {
  size_t size;          /* sizeof the caller's struct: set by NCCL_CONFIG_INITIALIZER */
  unsigned int magic;   /* NCCL_API_MAGIC */
  unsigned int version; /* NCCL_VERSION_CODE of the caller's header */
  int blocking;         /* 0: initialisation returns ncclInProgress and completes later */
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName; /* shown in the library's log lines */
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  /* NCCL 2.29-2.31's fields (graph and one-sided tuning): accepted, none changes RCCLX. */
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
  int launchOrderImplicit;
  int numRmaSig;
  int rmaEagerInit;
  int hostCftMode; /* an ncclHostCftMode_t */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
  {sizeof(ncclConfig_t),  NCCL_API_MAGIC,        NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                            \
   NCCL_CONFIG_UNDEF_INT}

/* One vendor option of an ncclCollConfig_t: options form a NULL-terminated list through next,
 * each keyed by its vendor's id and its own id. This library reads none (every one is accepted
 * and ignored, as NCCL does with other vendors' options). */
typedef struct ncclConfigExt {
  struct ncclConfigExt* next;
  struct {
    int vendorId;
    int optionId;
  } key;
  union {
    int i;
    const char* s;
    void* raw;
  } val;
} ncclConfigExt_t;

/* Per-call options of the nccl*Config collectives (NCCL 2.31's layout), versioned by its leading
 * size / magic / version fields like ncclConfig_t: initialise it with
 * NCCL_COLLCONFIG_INITIALIZER, then set the fields wanted, the same on every rank. Of its fields
 * this library uses algSelection (an all_reduce's algorithm) and forceAlgSelection; the CTA
 * counts, cluster size, CTA policy and profiler tag are accepted and ignored (the library sizes
 * its own launches). */
typedef struct ncclCollConfig_v23100 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  ncclConfigExt_t* ext;
  int minCTAs;
  int maxCTAs;
  int nvlsCTAs;
  int cgaClusterSize;
  /* A comma-separated list of algorithm names, the first one this library has for the call
   * wins: its own (ring, dda_flat, dda_tree, dda_large, flat, hierarchical, auto) or NCCL's Ring
   * and Tree (run as ring and dda_tree). "^..." (NCCL's exclusion list), "", NULL: automatic.
   * "allreduce:LIST;broadcast:LIST" gives each collective its own list. */
  const char* algSelection;
  /* 1 (the default): a selection naming no algorithm this library has for the call is
   * ncclInvalidArgument; 0: the library then chooses. */
  int forceAlgSelection;
  int CTAPolicy;
  uint64_t userProfilerTag;
} ncclCollConfig_t;

#define NCCL_COLLCONFIG_INITIALIZER                 \
  {sizeof(ncclCollConfig_t), NCCL_API_MAGIC,        \
   NCCL_VERSION_CODE,        NCCL_CONFIG_UNDEF_PTR, \
   NCCL_CONFIG_UNDEF_INT,    NCCL_CONFIG_UNDEF_INT, \
   NCCL_CONFIG_UNDEF_INT,    NCCL_CONFIG_UNDEF_INT, \
   NCCL_CONFIG_UNDEF_PTR,    1,                     \
   NCCL_CONFIG_UNDEF_INT,    0}

/* What ncclGroupSimulateEnd reports. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_MAGIC 0x74685283
#define NCCL_SIM_INFO_INITIALIZER \
  {sizeof(ncclSimInfo_t), NCCL_SIM_INFO_MAGIC, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT}

/* Reduction operations. Values from ncclNumOps up to ncclMaxRedOp are handles made by
 * ncclRedOpCreatePreMulSum. */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/* Element types. */
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where ncclRedOpCreatePreMulSum's scalar lives. */
typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* ---- Library, errors, memory ------------------------------------------------------------- */

/* Stores NCCL_VERSION_CODE (23102 for 2.31.2) in *version. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* A new id naming a bootstrap root this process hosts (a TCP store served by a background
 * thread). With NCCL_COMM_ID=host:port set, the id names that address instead and rank 0 hosts
 * the root there when it initialises its communicator. Needs no GPU. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* A static, human-readable description of a result code; never NULL. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* The message of the last error an nccl* call returned on the calling thread ("" when none);
 * it names the call, the argument and its value. comm may be NULL. */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

/* Re-reads the logging level (RCCLX_DEBUG, else NCCL_DEBUG) from the environment. The library
 * also exports ncclResetDebugInitInternal(void), which does the same and, as in NCCL, is
 * declared in no header. */
void ncclResetDebugInit(void);
void pncclResetDebugInit(void);

/* Memory for communication buffers: device memory of the current GPU with an IPC handle (so
 * ncclCommWindowRegister can map it on every peer); page-aligned host memory on a machine
 * without a usable GPU. Free it with ncclMemFree. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);
ncclResult_t pncclMemFree(void* ptr);

/* ---- Communicators ----------------------------------------------------------------------- */

/* Creates this rank's communicator of nranks ranks that meet through commId. Collective over
 * the ranks (inside ncclGroupStart/End, one thread may initialise several). The communicator
 * uses the current GPU when one is usable, else host memory only. */
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/* As ncclCommInitRank, with a configuration (NULL: defaults). With config->blocking == 0 it
 * returns ncclInProgress at once; poll ncclCommGetAsyncError until it reports ncclSuccess. */
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);
/* As ncclCommInitRankConfig; nId ids may be given (every rank the same list), the first one is
 * used. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);
/* ndev communicators of one clique, one per device of devlist (NULL: GPUs 0..ndev-1), made by
 * this one process. On a machine without a usable GPU they are host-memory communicators. */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);

/* Waits for the communicator's outstanding host work. */
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
/* Releases the communicator (collective). Later calls on the handle return ncclInvalidUsage. */
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
/* Releases the communicator without waiting for peers; may be called from another thread than
 * the one using it (it waits for a call in progress on that thread to return). */
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
/* Stops the communicator from accepting new calls (revokeFlags: NCCL_REVOKE_DEFAULT, the only
 * value defined); destroy or abort it next. */
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);

/* Collective: ranks passing the same color form a new communicator ordered by (key, rank);
 * NCCL_SPLIT_NOCOLOR gives *newcomm = NULL. config NULL: the parent's configuration. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);
/* Collective over the ranks not excluded only: a new communicator without the
 * excludeRanksList ranks, the others renumbered in order. Excluded ranks (failed ones, say)
 * need not call it; one that does gets *newcomm = NULL. shrinkFlags: NCCL_SHRINK_DEFAULT or
 * NCCL_SHRINK_ABORT (no operation of the parent is in flight when it is called: host calls
 * have returned, GPU work stays ordered on its streams). */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);

/* Growing a communicator by new ranks, in two steps. One rank of `comm` (the root) asks for an
 * id with ncclCommGetUniqueId and hands it to the processes of the new ranks; until an
 * ncclCommGrow on that rank consumes it, a second request is refused. Then every rank of
 * `comm` calls ncclCommGrow(comm, nRanks, id or NULL, -1, ...) (the root passes the id, the
 * others NULL) and keeps its rank; every new rank calls ncclCommGrow(NULL, nRanks, &id, rank,
 * ...) with one of the ranks comm's ranks do not hold. *newcomm is a new communicator of
 * nRanks ranks; `comm` stays usable. config as ncclCommInitRankConfig's (NULL: comm's for its
 * ranks, the defaults for new ones). */
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                           ncclComm_t* newcomm, ncclConfig_t* config);

/* ncclCommSuspend's flags: release what the communicator's GPU memory allows (RCCLX: none of
 * it, since peers map all of it; see ncclCommMemStats). */
#define NCCL_SUSPEND_MEM 0x01
/* Local: no call but ncclCommResume, ncclCommMemStats, ncclCommDestroy and ncclCommAbort is
 * accepted on comm until ncclCommResume. */
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommResume(ncclComm_t comm);

/* What ncclCommMemStats reports, in bytes unless said otherwise. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* GPU memory ncclCommSuspend could release (RCCLX: 0) */
  ncclStatGpuMemSuspended = 1, /* 1 while suspended, else 0 */
  ncclStatGpuMemPersist = 2,   /* GPU memory held for the communicator's whole life */
  ncclStatGpuMemTotal = 3      /* all GPU memory the communicator allocated for itself */
} ncclCommMemStat_t;
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);

/* ncclInProgress while a non-blocking initialisation runs, then its result, or the first error
 * an asynchronous operation of the communicator met. Never blocks. */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
/* The communicator's GPU, or -1 for a host-memory communicator. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);

/* Local registration of a buffer (not collective): accepted, returning a handle for
 * ncclCommDeregister; zero-copy comes from ncclCommWindowRegister. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);
/* Collective: device memory of the communicator's GPU (inside one cudaMalloc / ncclMemAlloc
 * allocation, the same size on every rank) becomes a symmetric buffer every peer maps, so
 * collectives whose output lies in it store straight into the peers' outputs. Host memory gets
 * a window that changes nothing. */
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
/* The buffer `win` was registered with (NCCL 2.31). */
ncclResult_t ncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ncclResult_t pncclWinGetUserPtr(ncclComm_t comm, ncclWindow_t win, void** outUserPtr);

/* ---- Reduction operators ----------------------------------------------------------------- */

/* A SUM whose inputs are first multiplied by *scalar (of type datatype; read now for
 * ncclScalarHostImmediate, and for ncclScalarDevice too: RCCLX copies the value at creation),
 * for collectives of comm on datatype. Once the last call using the handle has returned it may
 * be destroyed, even inside an open group. */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

/* ---- Collectives (enqueued on stream for GPU buffers; run before returning for host
 * buffers, where stream must be NULL). In place when the buffers alias as NCCL documents. ---- */

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                         cudaStream_t stream);
/* In-place broadcast (deprecated in NCCL). */
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);
/* sendbuff holds nranks blocks of recvcount elements; block i, reduced, lands on rank i. */
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);
/* recvbuff receives rank i's sendcount elements at offset i * sendcount. */
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* count elements to and from every rank: sendbuff + j * count goes to rank j. */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* The root receives rank i's count elements at recvbuff + i * count. */
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
/* Rank i receives count elements from the root's sendbuff + i * count. */
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* The collectives above with per-call options (ncclCollConfig_t; NULL: none). */
ncclResult_t ncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclAllReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                  cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclBroadcastConfig(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclReduceConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config);
ncclResult_t pncclAllGatherConfig(const void* sendbuff, void* recvbuff, size_t sendcount,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                  const ncclCollConfig_t* config);
ncclResult_t ncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclReduceScatterConfig(const void* sendbuff, void* recvbuff, size_t recvcount,
                                      ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                      cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                const ncclCollConfig_t* config);
ncclResult_t pncclAlltoAllConfig(const void* sendbuff, void* recvbuff, size_t count,
                                 ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream,
                                 const ncclCollConfig_t* config);
ncclResult_t ncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
                              ncclDataType_t datatype, int root, ncclComm_t comm,
                              cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclGatherConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t ncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
                               ncclDataType_t datatype, int root, ncclComm_t comm,
                               cudaStream_t stream, const ncclCollConfig_t* config);
ncclResult_t pncclScatterConfig(const void* sendbuff, void* recvbuff, size_t count,
                                ncclDataType_t datatype, int root, ncclComm_t comm,
                                cudaStream_t stream, const ncclCollConfig_t* config);

/* Point to point, matched with the peer's ncclRecv / ncclSend in call order; put a rank's
 * sends and receives that must progress together inside one group. */
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);

/* ---- One-sided calls on windows (NCCL 2.31) ------------------------------------------------- */

/* On windows of host memory (ncclCommWindowRegister, collective), with the NULL stream, outside
 * groups; each runs on the calling thread. ncclPutSignal copies count elements of datatype from
 * localbuff into peer's memory of window peerWin at byte offset peerWinOffset, then signals
 * peer; ncclSignal signals peer without data. ncclWaitSignal returns once, for every
 * descriptor, opCnt more signals from its peer have arrived; the data the peer put before each
 * of them is then in this rank's windows (not earlier: RCCLX applies a put at the wait that
 * matches its signal). Signals from one peer are counted in order. RCCLX has one signal per
 * ordered pair of ranks: sigIdx and ctx must be 0, flags 0. A rank more than 1024 signals ahead
 * of a peer's waits blocks until the peer waits. Windows on device memory are refused
 * (ncclInvalidUsage); docs/nccl_compat.rst says more. */
typedef struct {
  int opCnt;  /* signals to wait for */
  int peer;   /* the rank that sends them */
  int sigIdx; /* 0 */
  int ctx;    /* 0 */
} ncclWaitSignalDesc_t;
ncclResult_t ncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                           ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                           unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclPutSignal(const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
                            ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx,
                            unsigned int flags, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t pncclSignal(int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
                         cudaStream_t stream);
ncclResult_t ncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t pncclWaitSignal(int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
                             cudaStream_t stream);

/* ---- Groups (per thread; they nest) -------------------------------------------------------- */

/* Calls until the matching outermost ncclGroupEnd are recorded (communicator initialisations
 * included) and run together by it, across every communicator they name. */
ncclResult_t ncclGroupStart(void);
ncclResult_t pncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t pncclGroupEnd(void);
/* Ends the group as ncclGroupEnd does: RCCLX has no cost model, so the group's operations run
 * and simInfo->estimatedTime receives their measured host time in microseconds. */
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* ---- NCCL's device API (host side) ------------------------------------------------------- */

/* Incomplete here: nccl_device.h completes both (NCCL 2.31's layouts). */
typedef struct ncclDevCommRequirements ncclDevCommRequirements;
typedef struct ncclDevComm ncclDevComm;
/* RCCLX makes no device communicators: ncclDevCommCreate returns ncclInvalidUsage, its last
 * error naming the requirements it cannot meet; ncclDevCommDestroy returns ncclInvalidUsage
 * for any devComm (ncclInvalidArgument for NULL). */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs,
                               ncclDevComm* outDevComm);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements* reqs,
                                ncclDevComm* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm* devComm);

/* ---- RCCL extensions ----------------------------------------------------------------------- */

/* All-to-all with per-peer counts and displacements, in elements (RCCL's signature). */
ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                            void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);

/* RCCLX's all-to-all-v whose split sizes are data, kept where the buffers live (device memory
 * for GPU buffers): the host never reads them, so a MoE dispatch needs no device-to-host sync
 * and can be captured in a CUDA graph (replays read the counts anew). Counts are in rows of
 * rowElems elements of datatype. sendSplits[p] rows, from row sendOffsets[p] of sendbuff (NULL:
 * blocks packed in rank order), go to rank p. recvSplits[p] receives the rows that came from
 * rank p, stored in rank order from row 0 of recvbuff, and recvOffsets[p] (unless NULL) where
 * they start. sendRows and recvRows are the rows the buffers hold: rows past recvRows are not
 * written and the call fails naming the ranks and counts. The four arrays hold nranks int64_t
 * each. Not in place. */
ncclResult_t ncclAllToAllvDynamic(const void* sendbuff, size_t sendRows, const int64_t* sendSplits,
                                  const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
                                  int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems,
                                  ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllToAllvDynamic(const void* sendbuff, size_t sendRows, const int64_t* sendSplits,
                                   const int64_t* sendOffsets, void* recvbuff, size_t recvRows,
                                   int64_t* recvSplits, int64_t* recvOffsets, size_t rowElems,
                                   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
/* The same, when the caller already knows what it receives: recvSplits[p] (read, not written)
 * is the rows rank p sends to this rank, so the count exchange is skipped (on GPU buffers the
 * counts must be exact: a mismatch ends in the wait timeout, RCCLX_TIMEOUT_MS; on host buffers
 * the counts still travel and a mismatch fails naming both numbers). */
ncclResult_t ncclAllToAllvDynamicKnownCounts(const void* sendbuff, size_t sendRows,
                                             const int64_t* sendSplits, const int64_t* sendOffsets,
                                             void* recvbuff, size_t recvRows,
                                             const int64_t* recvSplits, int64_t* recvOffsets,
                                             size_t rowElems, ncclDataType_t datatype,
                                             ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllToAllvDynamicKnownCounts(const void* sendbuff, size_t sendRows,
                                              const int64_t* sendSplits, const int64_t* sendOffsets,
                                              void* recvbuff, size_t recvRows,
                                              const int64_t* recvSplits, int64_t* recvOffsets,
                                              size_t rowElems, ncclDataType_t datatype,
                                              ncclComm_t comm, cudaStream_t stream);
#define RCCLX_ALLTOALLV_DYNAMIC 1

/* NCCL 2.31's parameter calls, over RCCLX's knobs: the keys are the knob names (RCCLX_*,
 * RCCL_* and the NCCL_* ones RCCLX honours; a key without its prefix is also tried with NCCL_,
 * RCCLX_ and RCCL_), each read as the library reads it (the environment, else the default) when
 * asked. Booleans read as 0 / 1 and byte sizes in bytes; a value that does not fit the type
 * asked is ncclInvalidArgument. ncclParamGet writes a numeric parameter as its 8-byte int64_t
 * and a string as its bytes. Strings returned stay valid until the thread's next such call. */
typedef struct ncclParamHandle* ncclParamHandle_t;
ncclResult_t ncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t pncclParamBind(ncclParamHandle_t* out, const char* key);
ncclResult_t ncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t pncclParamGetI8(ncclParamHandle_t h, int8_t* out);
ncclResult_t ncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t pncclParamGetI16(ncclParamHandle_t h, int16_t* out);
ncclResult_t ncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t pncclParamGetI32(ncclParamHandle_t h, int32_t* out);
ncclResult_t ncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t pncclParamGetI64(ncclParamHandle_t h, int64_t* out);
ncclResult_t ncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t pncclParamGetU8(ncclParamHandle_t h, uint8_t* out);
ncclResult_t ncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t pncclParamGetU16(ncclParamHandle_t h, uint16_t* out);
ncclResult_t ncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t pncclParamGetU32(ncclParamHandle_t h, uint32_t* out);
ncclResult_t ncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t pncclParamGetU64(ncclParamHandle_t h, uint64_t* out);
ncclResult_t ncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t pncclParamGetStr(ncclParamHandle_t h, const char** out);
ncclResult_t ncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t pncclParamGet(ncclParamHandle_t h, void* out, int maxLen, int* len);
ncclResult_t ncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t pncclParamGetParameter(const char* key, const char** value, int* valueLen);
ncclResult_t ncclParamGetAllParameterKeys(const char*** table, int* tableLen);
ncclResult_t pncclParamGetAllParameterKeys(const char*** table, int* tableLen);
/* Logs every parameter and its value at INFO (RCCLX_DEBUG or NCCL_DEBUG=INFO). */
void ncclParamDumpAll(void);
void pncclParamDumpAll(void);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
