/*
 * nccl.h of RCCLX's NCCL-ABI library (libnccl.so.2, also installed as librccl.so.1).
 *
 * Types, enum values and the version macros are those of NCCL 2.28, so programs compiled against
 * NCCL's header run on this library and vice versa. Only the functions declared below exist in
 * this release; the communicator and collective API will be added here as it is implemented.
 * Every function also exists as a p-prefixed alias (pncclGetVersion, ...) for profilers.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <stddef.h>
#include <stdint.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 3
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22803
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

/* Identifies this header as RCCLX's (NCCL's own header does not define it). */
#define RCCLX_NCCL_COMPAT 1

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque communicator handle (no function of this release creates one). */
typedef struct ncclComm* ncclComm_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/* Names a bootstrap root; made by ncclGetUniqueId on one rank and passed to all others. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Result codes: the same numbers as NCCL's. */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

/* Reduction operations. Values from ncclNumOps up to ncclMaxRedOp are reserved for
 * user-defined operations (ncclRedOpCreate*, not implemented yet). */
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

/* Stores the library's version as NCCL_VERSION_CODE does (22803 for 2.28.3) in *version.
 * Returns ncclInvalidArgument when version is NULL. */
ncclResult_t ncclGetVersion(int* version);
ncclResult_t pncclGetVersion(int* version);

/* Creates a unique id naming a bootstrap root hosted by this process (a TCP store served by a
 * background thread, kept until the process exits). The caller shares the id with every rank
 * out of band. Needs no GPU. */
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);

/* A static, human-readable description of a result code; never NULL. */
const char* ncclGetErrorString(ncclResult_t result);
const char* pncclGetErrorString(ncclResult_t result);

/* The message of the last error returned by an nccl* call on the calling thread ("" when none
 * failed yet). `comm` is accepted for NCCL compatibility and may be NULL. The string stays valid
 * until the thread's next failing nccl* call. */
const char* ncclGetLastError(ncclComm_t comm);
const char* pncclGetLastError(ncclComm_t comm);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
