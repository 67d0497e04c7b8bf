// One set of names for the GPU runtime, whichever vendor's it is: CUDA (what runs here) or HIP.
//
// RCCL gets its HIP sources by running hipify over NCCL's; we instead write every GPU file once
// against the names below. Host code uses the gpu* types, constants and functions; host and
// device code get the warp size as ctran::kWarpSize (RCCLX_WARP_SIZE): 32 on NVIDIA, 64 (the
// wavefront) on AMD's CDNA GPUs. Only translation units of a build with GPU code (RCCLX_HAVE_GPU:
// RCCLX_HAVE_CUDA, or RCCLX_HAVE_HIP for the AMD build, cmake/RcclxHip.cmake) may include this
// header: it pulls in the vendor runtime.
//
// CTRAN_GPU_CHECK(call, context...) turns a failed runtime call into ctran::CudaError whose
// message names the call, the runtime's own error text and the caller's context.
#pragma once

#include <string>

#if defined(RCCLX_HAVE_HIP) || defined(__HIP_PLATFORM_AMD__)
#define RCCLX_GPU_HIP 1
#include <hip/hip_runtime.h>
#else
#define RCCLX_GPU_CUDA 1
#include <cuda.h>  // the driver's types, for gpuAllocationOf (nothing links the driver library)
#include <cuda_runtime.h>
#endif

#include "ctran/checks.hpp"

// RCCLX_GPU_FP8_HW: 1 while compiling device code for a target that converts float <-> OCP fp8
// (e4m3 / e5m2) in hardware (NVIDIA sm_89 and newer), else 0. AMD's gfx90a has no FP8
// conversion and gfx94x converts only the FNUZ variants, so HIP builds take the software path.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define RCCLX_GPU_FP8_HW 1
#else
#define RCCLX_GPU_FP8_HW 0
#endif

#if RCCLX_GPU_HIP

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuIpcMemHandle_t = hipIpcMemHandle_t;
using gpuPointerAttributes = hipPointerAttribute_t;
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
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEventSynchronize hipEventSynchronize
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuPointerGetAttributes hipPointerGetAttributes
using gpuEvent_t = hipEvent_t;
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuEventRecord hipEventRecord
#define gpuEventDestroy hipEventDestroy
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuLaunchHostFunc hipLaunchHostFunc
#define gpuEventQuery hipEventQuery
#define gpuErrorNotReady hipErrorNotReady
using gpuHostFn_t = hipHostFn_t;
#define RCCLX_WARP_SIZE 64
// Peer-visible memory (flags polled with system-scope atomics) must be fine-grained on AMD:
// plain hipMalloc memory is coarse-grained, coherent only at kernel boundaries.
#ifdef hipDeviceMallocUncached
#define RCCLX_HIP_PEER_VISIBLE_FLAGS hipDeviceMallocUncached
#else
#define RCCLX_HIP_PEER_VISIBLE_FLAGS hipDeviceMallocFinegrained
#endif
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
static_assert(__AMDGCN_WAVEFRONT_SIZE == RCCLX_WARP_SIZE,
              "RCCLX's HIP kernels assume 64-wide wavefronts (CDNA: gfx90a, gfx94x)");
#endif

#else

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuIpcMemHandle_t = cudaIpcMemHandle_t;
using gpuPointerAttributes = cudaPointerAttributes;
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
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEventSynchronize cudaEventSynchronize
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuPointerGetAttributes cudaPointerGetAttributes
using gpuEvent_t = cudaEvent_t;
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuEventRecord cudaEventRecord
#define gpuEventDestroy cudaEventDestroy
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuLaunchHostFunc cudaLaunchHostFunc
#define gpuEventQuery cudaEventQuery
#define gpuErrorNotReady cudaErrorNotReady
using gpuHostFn_t = cudaHostFn_t;
#define RCCLX_WARP_SIZE 32

#endif

namespace ctran {

/// Threads per warp (NVIDIA) or wavefront (AMD) of the GPUs this build targets.
constexpr int kWarpSize = RCCLX_WARP_SIZE;

/// Allocates device memory that peers map (IPC) and signal with system-scope atomics:
/// cudaMalloc on NVIDIA; fine-grained (uncached) memory on AMD.
inline gpuError_t gpuMallocPeerVisible(void** ptr, size_t bytes) {
#if RCCLX_GPU_HIP
  return hipExtMallocWithFlags(ptr, bytes, RCCLX_HIP_PEER_VISIBLE_FLAGS);
#else
  return cudaMalloc(ptr, bytes);
#endif
}

/// Pinned host memory mapped into the device's address space: kernels store into it (through
/// gpuHostDevicePointer) and the host reads it without a copy or a synchronisation.
inline gpuError_t gpuHostAllocMapped(void** ptr, size_t bytes) {
#if RCCLX_GPU_HIP
  return hipHostMalloc(ptr, bytes, hipHostMallocMapped);
#else
  return cudaHostAlloc(ptr, bytes, cudaHostAllocMapped);
#endif
}

/// Frees what gpuHostAllocMapped returned.
inline gpuError_t gpuHostFreeMapped(void* ptr) {
#if RCCLX_GPU_HIP
  return hipHostFree(ptr);
#else
  return cudaFreeHost(ptr);
#endif
}

/// The device address of mapped host memory.
inline gpuError_t gpuHostDevicePointer(void** device, void* host) {
#if RCCLX_GPU_HIP
  return hipHostGetDevicePointer(device, host, 0);
#else
  return cudaHostGetDevicePointer(device, host, 0);
#endif
}

/// Blocks of `kernel` with `threads` threads each (no dynamic shared memory) that one SM holds
/// at once (the occupancy API); 0 when the query fails (the error is cleared).
template <typename Kernel>
int gpuBlocksPerSm(Kernel kernel, int threads) {
  int blocks = 0;
#if RCCLX_GPU_HIP
  if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0) != hipSuccess) {
    (void)hipGetLastError();
    return 0;
  }
#else
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
#endif
  return blocks;
}

/// The PCI bus id of GPU `device` ("" when the query fails; the error is cleared): the same for
/// every process that uses the GPU, whatever it numbers it.
inline std::string gpuBusId(int device) {
  char id[64] = {};
#if RCCLX_GPU_HIP
  if (hipDeviceGetPCIBusId(id, sizeof(id), device) != hipSuccess) {
    (void)hipGetLastError();
    return "";
  }
#else
  if (cudaDeviceGetPCIBusId(id, sizeof(id), device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
#endif
  return id;
}

/// Whether work enqueued on `stream` is being captured into a graph (false when the query
/// fails, as for a stream that no longer exists; the error is cleared).
inline bool gpuStreamCapturing(gpuStream_t stream) {
#if RCCLX_GPU_HIP
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  if (hipStreamIsCapturing(stream, &status) != hipSuccess) {
    (void)hipGetLastError();
    return false;
  }
  return status != hipStreamCaptureStatusNone;
#else
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return status != cudaStreamCaptureStatusNone;
#endif
}

/// Whether gpuPointerGetAttributes found device memory (not host, managed or unregistered).
/// HIP: the attribute's field name changed across ROCm releases, so only the query's success
/// (and gpuAllocationOf after it) tells.
inline bool gpuPointerIsDevice(const gpuPointerAttributes& attr) {
#if RCCLX_GPU_HIP
  (void)attr;
  return true;
#else
  return attr.type == cudaMemoryTypeDevice;
#endif
}

/// The allocation that holds a device pointer: where it starts, its size, and whether it has a
/// legacy IPC handle (cudaMalloc / hipMalloc memory has; memory mapped through the virtual
/// memory API, cuMemCreate, such as torch's expandable segments, has not).
struct GpuAllocation {
  void* base = nullptr;
  size_t bytes = 0;
  bool ipcCapable = false;
};

/// Fills `out` for device pointer `ptr`. CUDA's runtime has no such query: the driver's
/// cuPointerGetAttributes is reached through the runtime's entry-point lookup, so nothing links
/// the driver library directly.
inline gpuError_t gpuAllocationOf(const void* ptr, GpuAllocation* out) {
#if RCCLX_GPU_HIP
  hipDeviceptr_t base = nullptr;
  const hipError_t err = hipMemGetAddressRange(&base, &out->bytes, const_cast<void*>(ptr));
  if (err != hipSuccess) return err;
  out->base = base;
  // Where the runtime cannot tell, the export itself (hipIpcGetMemHandle) reports.
  unsigned long long capable = 0;
  if (hipPointerGetAttribute(&capable, HIP_POINTER_ATTRIBUTE_IS_LEGACY_HIP_IPC_CAPABLE,
                             const_cast<void*>(ptr)) != hipSuccess) {
    (void)hipGetLastError();
    capable = 1;
  }
  out->ipcCapable = capable != 0;
  return hipSuccess;
#else
  using GetAttributes = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
  static const GetAttributes getAttributes = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const cudaError_t err = cudaGetDriverEntryPointByVersion("cuPointerGetAttributes", &fn, 12000,
                                                             cudaEnableDefault, &found);
#else
    // CUDA 12.0-12.4 have no ...ByVersion; the symbol has had one ABI since it was added.
    const cudaError_t err =
        cudaGetDriverEntryPoint("cuPointerGetAttributes", &fn, cudaEnableDefault, &found);
#endif
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<GetAttributes>(fn)
               : nullptr;
  }();
  if (getAttributes == nullptr) return cudaErrorNotSupported;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
  CUdeviceptr base = 0;
  size_t bytes = 0;
  unsigned long long capable = 0;  // the driver writes a bool into its first byte
  void* values[] = {&base, &bytes, &capable};
  if (getAttributes(3, attributes, values, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS)
    return cudaErrorInvalidValue;  // not in a device allocation of this context
  *out = GpuAllocation{reinterpret_cast<void*>(base), bytes, capable != 0};
  return cudaSuccess;
#endif
}

/// The graph `stream` is being captured into, or null when it is not capturing.
inline gpuError_t gpuCaptureGraphOf(gpuStream_t stream, void** graph) {
  *graph = nullptr;
  unsigned long long id = 0;
#if RCCLX_GPU_HIP
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  hipGraph_t g = nullptr;
  const hipGraphNode_t* deps = nullptr;
  size_t numDeps = 0;
  const hipError_t err = hipStreamGetCaptureInfo_v2(stream, &status, &id, &g, &deps, &numDeps);
  if (err == hipSuccess && status == hipStreamCaptureStatusActive) *graph = g;
  return err;
#else
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t g = nullptr;
#if CUDART_VERSION >= 13000
  const cudaError_t err = cudaStreamGetCaptureInfo(stream, &status, &id, &g);
#else
  const cudaError_t err = cudaStreamGetCaptureInfo_v2(stream, &status, &id, &g);
#endif
  if (err == cudaSuccess && status == cudaStreamCaptureStatusActive) *graph = g;
  return err;
#endif
}

/// Whether gpuGraphOwn works in this build: graph user objects came with CUDA 11.3 and HIP 5.3.
#if RCCLX_GPU_HIP && HIP_VERSION < 50300000
#define RCCLX_GPU_GRAPH_OWN 0
#else
#define RCCLX_GPU_GRAPH_OWN 1
#endif

/// Hands `graph` (from gpuCaptureGraphOf) ownership of `payload`: `destroy(payload)` runs once
/// the graph and every graph instantiated from it are gone, on a thread of the runtime's that
/// must not call the GPU runtime itself.
inline gpuError_t gpuGraphOwn(void* graph, void* payload, void (*destroy)(void*)) {
#if !RCCLX_GPU_GRAPH_OWN
  (void)graph, (void)payload, (void)destroy;
  return hipErrorNotSupported;
#elif RCCLX_GPU_HIP
  hipUserObject_t object = nullptr;
  hipError_t err = hipUserObjectCreate(&object, payload, destroy, 1, hipUserObjectNoDestructorSync);
  if (err != hipSuccess) return err;
  return hipGraphRetainUserObject(static_cast<hipGraph_t>(graph), object, 1,
                                  hipGraphUserObjectMove);
#else
  cudaUserObject_t object = nullptr;
  cudaError_t err =
      cudaUserObjectCreate(&object, payload, destroy, 1, cudaUserObjectNoDestructorSync);
  if (err != cudaSuccess) return err;
  return cudaGraphRetainUserObject(static_cast<cudaGraph_t>(graph), object, 1,
                                   cudaGraphUserObjectMove);
#endif
}

/// Lets this thread make runtime calls a stream capture in progress would otherwise refuse
/// (mapping memory, exporting handles) for a scope, as relaxed capture mode does.
class GpuRelaxedCapture {
 public:
  GpuRelaxedCapture() {
#if RCCLX_GPU_HIP
    hipStreamCaptureMode mode = hipStreamCaptureModeRelaxed;
    ok_ = hipThreadExchangeStreamCaptureMode(&mode) == hipSuccess;
#else
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    ok_ = cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess;
#endif
    if (!ok_) (void)gpuGetLastError();
    previous_ = static_cast<int>(mode);
  }
  ~GpuRelaxedCapture() {
    if (!ok_) return;
#if RCCLX_GPU_HIP
    auto mode = static_cast<hipStreamCaptureMode>(previous_);
    (void)hipThreadExchangeStreamCaptureMode(&mode);
#else
    auto mode = static_cast<cudaStreamCaptureMode>(previous_);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
#endif
  }
  GpuRelaxedCapture(const GpuRelaxedCapture&) = delete;
  GpuRelaxedCapture& operator=(const GpuRelaxedCapture&) = delete;

 private:
  bool ok_ = false;
  int previous_ = 0;
};

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
  (void)gpuGetLastError();  // clear a non-sticky error so the next call starts clean
  throw CudaError(strCat(context, context.empty() ? "" : ": ", call,
                         " failed: ", gpuGetErrorString(err), " (", gpuRuntimeName(), " error ",
                         static_cast<int>(err), ")"));
}

/// Makes GPU `device` current on this thread for a scope and makes the caller's device current
/// again when the scope ends. The runtime's current device is per host thread and shared by
/// everything the thread runs: a process driving several GPUs (one rank per GPU) must find its
/// own choice unchanged after every call. Every host entry point that allocates, maps, enqueues
/// or synchronises on a communicator's GPU holds one. Throws CudaError naming `context` when
/// the device cannot be made current; restoring is best effort (a failure is cleared).
class GpuDeviceGuard {
 public:
  /// `context` is read only on failure (no string is built per call).
  GpuDeviceGuard(int device, const char* context) : device_(device) {
    gpuError_t err = gpuGetDevice(&previous_);
    if (err != gpuSuccess) throwGpuError(err, "gpuGetDevice", context);
    if (previous_ != device_) {
      err = gpuSetDevice(device_);
      if (err != gpuSuccess)
        throwGpuError(err, "gpuSetDevice", strCat(context, " (GPU ", device_, ")"));
    }
  }
  ~GpuDeviceGuard() {
    if (previous_ >= 0 && previous_ != device_ && gpuSetDevice(previous_) != gpuSuccess) {
      (void)gpuGetLastError();
    }
  }
  GpuDeviceGuard(int device, const std::string& context)
      : GpuDeviceGuard(device, context.c_str()) {}
  GpuDeviceGuard(const GpuDeviceGuard&) = delete;
  GpuDeviceGuard& operator=(const GpuDeviceGuard&) = delete;

 private:
  int device_;
  int previous_ = -1;
};

}  // namespace ctran

/// Runs a GPU runtime call; on failure throws CudaError naming the call and `context` parts.
#define CTRAN_GPU_CHECK(call, ...)                                                    \
  do {                                                                                \
    gpuError_t ctran_gpu_err_ = (call);                                               \
    if (ctran_gpu_err_ != gpuSuccess)                                                 \
      ::ctran::throwGpuError(ctran_gpu_err_, #call, ::ctran::strCat("" __VA_ARGS__)); \
  } while (0)
