// A minimal kernel that proves the GPU toolchain and runtime work end to end.
#include <cuda_runtime.h>

#include "ctran/checks.hpp"
#include "ctran/device.hpp"

namespace ctran::device {
namespace {

__global__ void storeValue(long long* out, long long value) { *out = value; }

void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw CudaError(strCat("device probe: ", what, ": ", cudaGetErrorString(err)));
}

}  // namespace

int64_t probe(int dev, int64_t value) {
  std::string why;
  int n = count(&why);
  CTRAN_CHECK(n > 0, CudaError, "device probe: ", why);
  CTRAN_CHECK(dev >= 0 && dev < n, InvalidArgument, "device probe: device ", dev,
              " is out of range for ", n, " GPUs");
  check(cudaSetDevice(dev), "cudaSetDevice");
  long long* d = nullptr;
  check(cudaMalloc(&d, sizeof(long long)), "cudaMalloc");
  storeValue<<<1, 1>>>(d, value);
  cudaError_t err = cudaGetLastError();
  long long out = 0;
  if (err == cudaSuccess) err = cudaMemcpy(&out, d, sizeof(out), cudaMemcpyDeviceToHost);
  cudaFree(d);
  check(err, "kernel launch / copy");
  return out;
}

}  // namespace ctran::device
