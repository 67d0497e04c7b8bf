/*
 * nccl_device/utility.h of RCCLX's NCCL-ABI library: the function-specifier macros NCCL's device
 * API is written with, so code that declares its own helpers with them compiles against these
 * headers as it does against NCCL's. The helpers NCCL keeps in its own namespace are not part of
 * its API and are not provided.
 */
#ifndef RCCLX_NCCL_DEVICE_UTILITY_H_
#define RCCLX_NCCL_DEVICE_UTILITY_H_

#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

/* A function inlined into kernels (nothing outside nvcc), and one usable on the host too. */
#ifndef NCCL_DEVICE_INLINE
#if defined(__CUDACC__)
#define NCCL_DEVICE_INLINE __device__ __forceinline__
#else
#define NCCL_DEVICE_INLINE
#endif
#endif
#ifndef NCCL_HOST_DEVICE_INLINE
#if defined(__CUDACC__)
#define NCCL_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define NCCL_HOST_DEVICE_INLINE inline
#endif
#endif

/* C linkage for a declaration shared by C and C++ code. NCCL_IR_EXTERN_C marks what NCCL gives
 * C linkage only in its LLVM bitcode library, which RCCLX does not build: it is empty here. */
#ifndef NCCL_EXTERN_C
#if defined(__cplusplus)
#define NCCL_EXTERN_C extern "C"
#else
#define NCCL_EXTERN_C
#endif
#endif
#ifndef NCCL_IR_EXTERN_C
#define NCCL_IR_EXTERN_C
#endif

/* `if constexpr` where the language has it, a plain `if` before C++17. */
#ifndef NCCL_IF_CONSTEXPR
#if defined(__cpp_if_constexpr) && __cpp_if_constexpr >= 201606
#define NCCL_IF_CONSTEXPR constexpr
#else
#define NCCL_IF_CONSTEXPR
#endif
#endif

#endif /* RCCLX_NCCL_DEVICE_UTILITY_H_ */
