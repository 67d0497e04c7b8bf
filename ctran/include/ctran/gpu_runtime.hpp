// One set of names for the GPU runtime, whichever vendor's it is: CUDA (what runs here) or HIP.
//
// RCCL gets its HIP sources by running hipify over NCCL's; we instead write every GPU file once
// against the names below. Host code uses the gpu* types, constants and functions; device code
// also gets RCCLX_WARP_SIZE. Only translation units of a build with GPU code (RCCLX_HAVE_CUDA,
// or RCCLX_HAVE_HIP for the AMD build) may include this header: it pulls in the vendor runtime.
//
// CTRAN_GPU_CHECK(call, context...) turns a failed runtime call into ctran::CudaError whose
// message names the call, the runtime's own error text and the caller's context.
#pragma once

#if defined(RCCLX_HAVE_HIP) || defined(__HIP_PLATFORM_AMD__)
#define RCCLX_GPU_HIP 1
#include <hip/hip_runtime.h>
#else
#define RCCLX_GPU_CUDA 1
#include <cuda_runtime.h>
#endif

#include "ctran/checks.hpp"

#if RCCLX_GPU_HIP

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuIpcMemHandle_t = hipIpcMemHandle_t;
#define gpuSuccess hipSuccess
#define gpuErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define gpuIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemset hipMemset
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define RCCLX_WARP_SIZE 64

#else

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuIpcMemHandle_t = cudaIpcMemHandle_t;
#define gpuSuccess cudaSuccess
#define gpuErrorPeerAccessAlreadyEnabled cudaErrorPeerAccessAlreadyEnabled
#define gpuIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemset cudaMemset
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define RCCLX_WARP_SIZE 32

#endif

namespace ctran {

/// "CUDA" or "HIP": the runtime this translation unit was built against (for messages).
inline const char* gpuRuntimeName() {
#if RCCLX_GPU_HIP
  return "HIP";
#else
  return "CUDA";
#endif
}

/// Throws CudaError "<context>: <call> failed: <runtime's error text> (error <code>)".
[[noreturn]] inline void throwGpuError(gpuError_t err, const char* call,
                                       const std::string& context) {
  gpuGetLastError();  // clear a non-sticky error so the next call starts clean
  throw CudaError(strCat(context, context.empty() ? "" : ": ", call,
                         " failed: ", gpuGetErrorString(err), " (", gpuRuntimeName(), " error ",
                         static_cast<int>(err), ")"));
}

}  // namespace ctran

/// Runs a GPU runtime call; on failure throws CudaError naming the call and `context` parts.
#define CTRAN_GPU_CHECK(call, ...)                                                    \
  do {                                                                                \
    gpuError_t ctran_gpu_err_ = (call);                                               \
    if (ctran_gpu_err_ != gpuSuccess)                                                 \
      ::ctran::throwGpuError(ctran_gpu_err_, #call, ::ctran::strCat("" __VA_ARGS__)); \
  } while (0)
