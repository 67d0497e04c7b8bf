// A minimal kernel that proves the GPU toolchain and runtime work end to end.
#include "ctran/checks.hpp"
#include "ctran/device.hpp"
#include "ctran/gpu_runtime.hpp"

namespace ctran::device {
namespace {

__global__ void storeValue(long long* out, long long value) { *out = value; }

void check(gpuError_t err, const char* what) {
  if (err != gpuSuccess)
    throw CudaError(strCat("device probe: ", what, ": ", gpuGetErrorString(err)));
}

}  // namespace

int64_t probe(int dev, int64_t value) {
  std::string why;
  int n = count(&why);
  CTRAN_CHECK(n > 0, CudaError, "device probe: ", why);
  CTRAN_CHECK(dev >= 0 && dev < n, InvalidArgument, "device probe: device ", dev,
              " is out of range for ", n, " GPUs");
  GpuDeviceGuard guard(dev, "device probe");  // the caller's current device is back on return
  long long* d = nullptr;
  check(gpuMalloc(&d, sizeof(long long)), "gpuMalloc");
  storeValue<<<1, 1>>>(d, value);
  gpuError_t err = gpuGetLastError();
  long long out = 0;
  if (err == gpuSuccess) err = gpuMemcpy(&out, d, sizeof(out), gpuMemcpyDeviceToHost);
  (void)gpuFree(d);
  check(err, "kernel launch / copy");
  return out;
}

}  // namespace ctran::device
