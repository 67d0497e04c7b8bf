// The few GPU runtime calls the C ABI makes itself (everything else is the core's): which GPU
// a new communicator uses, ncclMemAlloc's memory, reading a PreMulSum scalar. gpu_cuda.cpp
// implements them on the GPU runtime, gpu_none.cpp for builds without GPU code.
#pragma once

#include <cstddef>
#include <string>

namespace rcclx::nccl::gpu {

/// The calling thread's current GPU, or -1 when no GPU is usable (no driver, no device, or a
/// build without GPU code) or RCCLX_NCCL_HOST_ONLY is set: the communicator then uses host
/// memory only.
int currentDevice();
/// Why currentDevice() is -1 (RCCLX_NCCL_HOST_ONLY, no usable GPU and why, a build without GPU
/// code), for errors about a host-memory communicator.
std::string whyNoDevice();
/// Device memory of the current GPU that peers can map (an IPC-capable allocation); throws
/// CudaError naming the size when the runtime refuses.
void* allocDevice(size_t bytes);
/// Frees allocDevice's memory.
void freeDevice(void* ptr);
/// Copies `bytes` from device (or host) memory at `src` to the host.
void copyToHost(void* dst, const void* src, size_t bytes);

}  // namespace rcclx::nccl::gpu
