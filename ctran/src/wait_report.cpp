// Implementation of wait_report.hpp: the mapped host memory of a WaitReport.
#include "ctran/wait_report.hpp"

#include <new>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"

#ifdef RCCLX_HAVE_GPU
#include "ctran/gpu_runtime.hpp"
#endif

namespace ctran {

MappedWaitReport::MappedWaitReport(int device, const char* owner) {
#ifdef RCCLX_HAVE_GPU
  GpuDeviceGuard guard(device, owner);
  void* host = nullptr;
  gpuError_t e = gpuHostAllocMapped(&host, sizeof(WaitReport));
  if (e != gpuSuccess)
    throwGpuError(e, "gpuHostAllocMapped", strCat(owner, " (mapped host memory)"));
  host_ = new (host) WaitReport();
  void* dev = nullptr;
  e = gpuHostDevicePointer(&dev, host);
  if (e != gpuSuccess) {
    (void)gpuHostFreeMapped(host);
    throwGpuError(e, "gpuHostDevicePointer", owner);
  }
  device_ = static_cast<WaitReport*>(dev);
#else
  (void)device;
  throw CudaError(strCat(owner, ": this build has no GPU code (built without a CUDA compiler)"));
#endif
}

MappedWaitReport::~MappedWaitReport() {
#ifdef RCCLX_HAVE_GPU
  const gpuError_t e = gpuHostFreeMapped(host_);
  if (e != gpuSuccess) {
    (void)gpuGetLastError();
    CTRAN_WARN("freeing a wait report: ", gpuGetErrorString(e));
  }
#endif
}

WaitBound MappedWaitReport::bound(uint64_t timeoutNs) const {
  WaitBound b;
  b.timeoutNs = timeoutNs;
  b.abort = &device_->abort;
  b.report = device_;
  return b;
}

void MappedWaitReport::abort() { __atomic_store_n(&host_->abort, 1u, __ATOMIC_RELEASE); }

bool MappedWaitReport::timedOut() const {
  return __atomic_load_n(&host_->timedOut, __ATOMIC_ACQUIRE) != 0;
}

}  // namespace ctran
