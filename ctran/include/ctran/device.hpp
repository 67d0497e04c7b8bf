// What GPU support this build has and whether a GPU is usable here. Never crashes on a
// machine without a GPU driver: it reports "no GPU" and why.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ctran::device {

/// True when the library was compiled with the GPU code.
bool builtWithCuda();
/// Number of usable GPUs; 0 when there are none, with the reason in `why` if given.
int count(std::string* why = nullptr);
/// The GPU whose device memory holds `ptr`, or -1 when it is host memory (pageable, pinned or
/// unknown to the GPU runtime, and always in builds without GPU code). Managed memory counts
/// as its device's.
int pointerDevice(const void* ptr);
/// Runs a one-thread kernel on `dev` that stores `value` in device memory and returns what it
/// read back; throws CudaError when no GPU is usable.
int64_t probe(int dev, int64_t value);
/// Runs `fn` with GPU `dev` current on this thread, then makes the caller's device current
/// again (also when `fn` throws). For code that cannot include the GPU runtime, e.g. to let a
/// Python library export a tensor of another GPU than the thread's current one. Builds
/// without GPU code just run `fn`; throws CudaError when `dev` cannot be made current.
void withDevice(int dev, const std::function<void()>& fn);
/// Peers' GPU memory mappings (cudaIpcOpenMemHandle) this process holds open: a communicator or
/// window opens them and closes them when destroyed, after a failure too. For leak checks;
/// always 0 in builds without GPU code.
int64_t openIpcMappings();

}  // namespace ctran::device
