// Implementation of device.hpp's queries (the probe kernel is in device_probe.cu).
#include "ctran/checks.hpp"
#include "ctran/device.hpp"

#ifdef RCCLX_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace ctran::device {

bool builtWithCuda() {
#ifdef RCCLX_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

int count(std::string* why) {
#ifdef RCCLX_HAVE_CUDA
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why) *why = strCat("no GPU: ", cudaGetErrorString(err));
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return 0;
  }
  if (n == 0 && why) *why = "no GPU: the driver reports no devices";
  return n;
#else
  if (why) *why = "no GPU: this build has no GPU code (built without a CUDA compiler)";
  return 0;
#endif
}

#ifndef RCCLX_HAVE_CUDA
int64_t probe(int, int64_t) {
  throw CudaError("device probe: this build has no GPU code (built without a CUDA compiler)");
}
#endif

}  // namespace ctran::device
