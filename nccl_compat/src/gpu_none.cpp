// gpu.hpp for builds without GPU code: every communicator is a host-memory one.
#include <cstring>

#include "ctran/checks.hpp"
#include "gpu.hpp"

namespace rcclx::nccl::gpu {

int currentDevice() { return -1; }

std::string whyNoDevice() { return "this library was built without GPU code"; }

void* allocDevice(size_t bytes) {
  throw ctran::CudaError(ctran::strCat("cannot allocate ", bytes,
                                       " bytes of device memory: this library was built without "
                                       "GPU code"));
}

void freeDevice(void*) {}

void copyToHost(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

}  // namespace rcclx::nccl::gpu
