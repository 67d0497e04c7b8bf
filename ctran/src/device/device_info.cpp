// Implementation of device.hpp's queries (the probe kernel is in device_probe.cu).
#include "ctran/checks.hpp"
#include "ctran/device.hpp"

#ifdef RCCLX_HAVE_GPU
#include "ctran/gpu_runtime.hpp"
#endif

namespace ctran::device {

bool builtWithCuda() {
#ifdef RCCLX_HAVE_GPU
  return true;
#else
  return false;
#endif
}

int count(std::string* why) {
#ifdef RCCLX_HAVE_GPU
  int n = 0;
  gpuError_t err = gpuGetDeviceCount(&n);
  if (err != gpuSuccess) {
    if (why) *why = strCat("no GPU: ", gpuGetErrorString(err));
    (void)gpuGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why) *why = "no GPU: the driver reports no devices";
  return n;
#else
  if (why) *why = "no GPU: this build has no GPU code (built without a CUDA compiler)";
  return 0;
#endif
}

int pointerDevice(const void* ptr) {
#ifdef RCCLX_HAVE_GPU
  if (ptr == nullptr) return -1;
  gpuPointerAttributes attr{};
  const gpuError_t err = gpuPointerGetAttributes(&attr, ptr);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();  // memory the runtime never saw: host memory
    return -1;
  }
  return gpuPointerIsDevice(attr) ? attr.device : -1;
#else
  (void)ptr;
  return -1;
#endif
}

void withDevice(int dev, const std::function<void()>& fn) {
#ifdef RCCLX_HAVE_GPU
  GpuDeviceGuard guard(dev, "withDevice");
#else
  (void)dev;
#endif
  fn();
}

#ifndef RCCLX_HAVE_GPU
int64_t probe(int, int64_t) {
  throw CudaError("device probe: this build has no GPU code (built without a CUDA compiler)");
}
int64_t openIpcMappings() { return 0; }  // with GPU code: cuda_ipc_transport.cpp
#endif

}  // namespace ctran::device
