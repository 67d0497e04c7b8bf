// gpu.hpp on the GPU runtime (CUDA or HIP, through ctran's portable names).
#include "ctran/config.hpp"
#include "ctran/device.hpp"
#include "ctran/gpu_runtime.hpp"
#include "gpu.hpp"

namespace rcclx::nccl::gpu {
namespace {

// Lets the runtime tell host from device memory (gpu_runtime.hpp has no portable name for it).
#if RCCLX_GPU_HIP
constexpr auto kCopyEitherWay = hipMemcpyDefault;
#else
constexpr auto kCopyEitherWay = cudaMemcpyDefault;
#endif

}  // namespace

int currentDevice() {
  if (ctran::knob::RCCLX_NCCL_HOST_ONLY() || ctran::device::count() <= 0) return -1;
  int dev = -1;
  if (gpuGetDevice(&dev) != gpuSuccess) {
    (void)gpuGetLastError();
    return -1;
  }
  return dev;
}

std::string whyNoDevice() {
  if (ctran::knob::RCCLX_NCCL_HOST_ONLY()) {
    return "RCCLX_NCCL_HOST_ONLY is set, which makes every communicator a host-memory one";
  }
  std::string why;
  if (ctran::device::count(&why) <= 0) return why;
  return "no GPU was current when it was created";
}

void* allocDevice(size_t bytes) {
  void* ptr = nullptr;
  const gpuError_t err = ctran::gpuMallocPeerVisible(&ptr, bytes);
  CTRAN_CHECK(err == gpuSuccess, ctran::CudaError, "cannot allocate ", bytes,
              " bytes of device memory: ", gpuGetErrorString(err));
  return ptr;
}

void freeDevice(void* ptr) {
  const gpuError_t err = gpuFree(ptr);
  CTRAN_CHECK(err == gpuSuccess, ctran::CudaError, "cannot free device memory at ", ptr, ": ",
              gpuGetErrorString(err));
}

void copyToHost(void* dst, const void* src, size_t bytes) {
  const gpuError_t err = gpuMemcpy(dst, src, bytes, kCopyEitherWay);
  CTRAN_CHECK(err == gpuSuccess, ctran::CudaError, "cannot read ", bytes, " bytes at ", src, ": ",
              gpuGetErrorString(err));
}

}  // namespace rcclx::nccl::gpu
