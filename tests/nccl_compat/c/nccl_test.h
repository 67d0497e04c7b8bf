/* Helpers shared by the C test programs of the NCCL ABI (compiled against nccl.h only).
 *
 * A program is one rank: argv[1] = rank, argv[2] = nranks; the unique id comes hex-encoded in
 * the environment (NCCL_TEST_ID) from the test that starts the ranks, or, when NCCL_COMM_ID is
 * set, from ncclGetUniqueId itself. Every check that fails prints one line naming what failed
 * and counts it; main returns the count (0: passed). */
#ifndef NCCL_TEST_H_
#define NCCL_TEST_H_

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

static int g_failures = 0;
static int g_rank = -1;

#define EXPECT(cond, ...)                                                                \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "rank %d: %s:%d: FAILED %s: ", g_rank, __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                      \
      fprintf(stderr, "\n");                                                             \
      ++g_failures;                                                                      \
    }                                                                                    \
  } while (0)

/* A call that must succeed; on failure the program cannot go on (peers would hang). */
#define NCCLCHECK(call)                                                                        \
  do {                                                                                         \
    ncclResult_t r_ = (call);                                                                  \
    if (r_ != ncclSuccess) {                                                                   \
      fprintf(stderr, "rank %d: %s:%d: %s returned %d (%s): %s\n", g_rank, __FILE__, __LINE__, \
              #call, (int)r_, ncclGetErrorString(r_), ncclGetLastError(NULL));                 \
      exit(100);                                                                               \
    }                                                                                          \
  } while (0)

/* A call that must fail with `want` and leave a last error containing `text`. */
#define EXPECT_ERROR(call, want, text)                                                         \
  do {                                                                                         \
    ncclResult_t r_ = (call);                                                                  \
    const char* e_ = ncclGetLastError(NULL);                                                   \
    EXPECT(r_ == (want), "%s returned %d, expected %d (last error: %s)", #call, (int)r_,       \
           (int)(want), e_);                                                                   \
    EXPECT(strstr(e_, (text)) != NULL, "%s: last error '%s' does not mention '%s'", #call, e_, \
           (text));                                                                            \
  } while (0)

/* Test buffers: host memory, or with NCCL_TEST_GPU managed memory of the rank's GPU (the library
 * treats it as device memory; the checks read it on the host after test_sync()). */
#ifdef NCCL_TEST_GPU
#include <cuda_runtime.h>
static inline void* test_alloc(size_t bytes) {
  void* p = NULL;
  if (cudaMallocManaged(&p, bytes ? bytes : 1, cudaMemAttachGlobal) != cudaSuccess) exit(101);
  memset(p, 0, bytes ? bytes : 1);
  return p;
}
static inline void test_free(void* p) { cudaFree(p); }
static inline void test_sync(void) {
  if (cudaDeviceSynchronize() != cudaSuccess) exit(102);
}
/* Copies between host arrays and memory of either kind (ncclMemAlloc's device memory). */
static inline void test_copy(void* dst, const void* src, size_t bytes) {
  if (cudaMemcpy(dst, src, bytes, cudaMemcpyDefault) != cudaSuccess) exit(104);
}
static inline void test_select_gpu(int rank) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) exit(103);
  cudaSetDevice(rank % n);
}
#else
static inline void* test_alloc(size_t bytes) {
  void* p = calloc(bytes ? bytes : 1, 1);
  if (!p) exit(101);
  return p;
}
static inline void test_free(void* p) { free(p); }
static inline void test_sync(void) {}
static inline void test_copy(void* dst, const void* src, size_t bytes) { memcpy(dst, src, bytes); }
static inline void test_select_gpu(int rank) { (void)rank; }
#endif

static inline void test_init_args(int argc, char** argv, int* rank, int* nranks) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s RANK NRANKS [MODE]\n", argv[0]);
    exit(2);
  }
  *rank = atoi(argv[1]);
  *nranks = atoi(argv[2]);
  g_rank = *rank;
  test_select_gpu(*rank);
}

/* The job's unique id: NCCL_TEST_ID (256 hex digits), or ncclGetUniqueId under NCCL_COMM_ID. */
static inline ncclUniqueId test_unique_id(void) {
  ncclUniqueId id;
  const char* hex = getenv("NCCL_TEST_ID");
  memset(&id, 0, sizeof id);
  if (hex == NULL || strlen(hex) != 2 * NCCL_UNIQUE_ID_BYTES) {
    NCCLCHECK(ncclGetUniqueId(&id));
    return id;
  }
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    unsigned v = 0;
    sscanf(hex + 2 * i, "%2x", &v);
    id.internal[i] = (char)v;
  }
  return id;
}

/* ---- Element values: every type stores and loads small integers exactly. -------------------- */

static inline size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

static inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* float16 of a value that float16 holds exactly (the tests use small integers and halves). */
static inline uint16_t to_half(float f) {
  uint32_t u = float_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  int exp = (int)((u >> 23) & 0xff) - 127 + 15;
  if ((u & 0x7fffffffu) == 0) return (uint16_t)sign;
  return (uint16_t)(sign | ((uint32_t)exp << 10) | ((u >> 13) & 0x3ffu));
}

static inline float from_half(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ffu;
  if (exp == 0 && man == 0) return bits_float(sign);
  if (exp == 0) return (sign ? -1.0f : 1.0f) * ldexpf((float)man, -24);
  return bits_float(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

static inline void store(void* buf, size_t i, ncclDataType_t t, double v) {
  char* p = (char*)buf + i * type_size(t);
  switch (t) {
    case ncclInt8: {
      int8_t x = (int8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case ncclUint8: {
      uint8_t x = (uint8_t)v;
      memcpy(p, &x, 1);
      break;
    }
    case ncclInt32: {
      int32_t x = (int32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclUint32: {
      uint32_t x = (uint32_t)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclInt64: {
      int64_t x = (int64_t)v;
      memcpy(p, &x, 8);
      break;
    }
    case ncclUint64: {
      uint64_t x = (uint64_t)v;
      memcpy(p, &x, 8);
      break;
    }
    case ncclFloat16: {
      uint16_t x = to_half((float)v);
      memcpy(p, &x, 2);
      break;
    }
    case ncclFloat32: {
      float x = (float)v;
      memcpy(p, &x, 4);
      break;
    }
    case ncclFloat64: memcpy(p, &v, 8); break;
    case ncclBfloat16: {
      uint16_t x = (uint16_t)(float_bits((float)v) >> 16);
      memcpy(p, &x, 2);
      break;
    }
    default: {
      uint8_t x = (uint8_t)v;
      memcpy(p, &x, 1);
      break;
    } /* fp8: raw bytes */
  }
}

static inline double load(const void* buf, size_t i, ncclDataType_t t) {
  const char* p = (const char*)buf + i * type_size(t);
  switch (t) {
    case ncclInt8: {
      int8_t x;
      memcpy(&x, p, 1);
      return x;
    }
    case ncclUint8: {
      uint8_t x;
      memcpy(&x, p, 1);
      return x;
    }
    case ncclInt32: {
      int32_t x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclUint32: {
      uint32_t x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclInt64: {
      int64_t x;
      memcpy(&x, p, 8);
      return (double)x;
    }
    case ncclUint64: {
      uint64_t x;
      memcpy(&x, p, 8);
      return (double)x;
    }
    case ncclFloat16: {
      uint16_t x;
      memcpy(&x, p, 2);
      return from_half(x);
    }
    case ncclFloat32: {
      float x;
      memcpy(&x, p, 4);
      return x;
    }
    case ncclFloat64: {
      double x;
      memcpy(&x, p, 8);
      return x;
    }
    case ncclBfloat16: {
      uint16_t x;
      memcpy(&x, p, 2);
      return bits_float((uint32_t)x << 16);
    }
    default: {
      uint8_t x;
      memcpy(&x, p, 1);
      return x;
    }
  }
}

static inline int is_float(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16;
}

#endif /* NCCL_TEST_H_ */
