// Launching a kernel that waits on peers (every collective kernel of the libraries).
//
// An SM splits its on-chip memory between L1 and shared memory, and the split is set by the
// blocks resident on it: a block that needs more shared memory than the current split gives
// cannot start on that SM until the resident blocks leave. The collective kernels use almost
// no shared memory, so their SMs get the largest L1 and the smallest shared memory. Where ranks
// share a GPU, a peer's kernel waiting for this rank can hold a block on every SM; a kernel
// this rank runs before its collective (any with a few KiB of shared memory, torch's reductions
// and concatenations among them) then finds no SM it may start on, this rank never reaches the
// collective, and the peer's wait times out. Such a launch therefore asks for the split with
// the most shared memory, which leaves room for any other kernel's blocks
// (docs/measurements/2026-12-05_mps_shared_memory_carveout.md). Where MPS splits the SMs among
// the ranks (each on at most its share of them) the others always find SMs free of a peer's
// blocks, and, as on a GPU of its own, the launch is left as it was (the smaller L1 slowed the
// large allreduces by 8-17 %). AMD GPUs keep their shared memory (LDS) apart from L1: nothing to
// ask for there.
#pragma once

#include "ctran/gpu_runtime.hpp"

namespace ctran {

/// How one kernel is launched.
struct KernelLaunch {
  int blocks = 1;
  int threads = 1;
  void* stream = nullptr;  ///< cudaStream_t / hipStream_t
  /// Programmatic dependent launch: the kernel may start while the stream's previous kernel
  /// drains (it must wait for it itself). CUDA only.
  bool pdl = false;
  /// Ranks share the GPU and their waiting blocks may sit on every SM (co_residency.hpp): keep
  /// the SMs' shared memory free for their other kernels, as above.
  bool keepSharedMemoryFree = false;
};

/// Launches kernel<<<l.blocks, l.threads, 0, l.stream>>>(args...) as `l` says. The launch's
/// error is left for gpuGetLastError(), as a <<<>>> launch leaves it.
template <typename... Params, typename... Args>
void launchKernel(void (*kernel)(Params...), const KernelLaunch& l, Args... args) {
#if RCCLX_GPU_HIP
  kernel<<<l.blocks, l.threads, 0, static_cast<gpuStream_t>(l.stream)>>>(args...);
#else
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(l.blocks));
  config.blockDim = dim3(static_cast<unsigned>(l.threads));
  config.stream = static_cast<cudaStream_t>(l.stream);
  cudaLaunchAttribute attributes[2];
  attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attributes[0].val.programmaticStreamSerializationAllowed = l.pdl ? 1 : 0;
  config.attrs = attributes;
  config.numAttrs = 1;
  if (l.keepSharedMemoryFree) {
#if defined(cudaKernelNodeAttributePreferredSharedMemoryCarveout)
    // A launch attribute (recorded in a captured graph's kernel node too).
    attributes[1].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
    attributes[1].val.sharedMemCarveout = cudaSharedmemCarveoutMaxShared;
    config.numAttrs = 2;
#else
    // Toolkits without the launch attribute: the kernel's own attribute, which holds for every
    // later launch of it in this process.
    (void)cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
#endif
  }
  (void)cudaLaunchKernelEx(&config, kernel, args...);
#endif
}

}  // namespace ctran
