// GpuLowPrecision: a communicator's low-precision collectives on GPU buffers: the device staging
// (a DeviceWindow, allocated once) and the host side of each call, one kernel enqueued on the
// caller's stream (lp_gpu_all_reduce.cu, lp_gpu_exchange.cu). No allocation and no host
// synchronisation per call, so calls can be captured in a CUDA graph. Compiled in builds with
// GPU code only.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device/lp/lp_gpu_launch.hpp"
#include "rcclx/types.hpp"

namespace ctran {
class DeviceWindow;
}  // namespace ctran
namespace rcclx::gpu {
class DeviceResources;
}

namespace rcclx::lp {

class GpuLowPrecision {
 public:
  /// Collective (every rank of `resources`): takes 2 x `stagingBytes` of low-precision staging
  /// from `resources`. `maxBlocks` and `chunkBlocks` bound the kernels' launch shape.
  GpuLowPrecision(gpu::DeviceResources& resources, size_t stagingBytes, int maxBlocks,
                  size_t chunkBlocks);
  GpuLowPrecision(const GpuLowPrecision&) = delete;
  GpuLowPrecision& operator=(const GpuLowPrecision&) = delete;

  // The collectives, as LowPrecision's host versions (float32 or bfloat16; `blockElems` from
  // the plan), enqueued on `stream`.
  void allReduce(size_t blockElems, const void* send, void* recv, size_t count, DataType type,
                 bool average, void* stream);
  void reduceScatterV(size_t blockElems, const void* send, void* recv,
                      const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                      DataType type, bool average, void* stream);
  void allGatherV(size_t blockElems, const void* send, void* recv,
                  const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  DataType type, void* stream);
  void allToAll(size_t blockElems, const void* send, void* recv, size_t countPerRank, DataType type,
                void* stream);

  /// Whether `stream` is being captured into a graph.
  static bool capturing(void* stream);

 private:
  /// Launch shape and staging layout for segments of at most `segmentBlocks` blocks; `oneSlot`:
  /// the kernel never needs a second round slot.
  LpStaging shape(size_t segmentBlocks, size_t blockElems, bool oneSlot) const;

  gpu::DeviceResources& res_;
  int device_;
  int nranks_;
  int rank_;
  size_t halfBytes_;
  int maxBlocks_;
  size_t chunkBlocks_;
  ctran::WaitBound bound_;
  ctran::DeviceWindow* window_;  ///< the low-precision staging, res_'s
};

}  // namespace rcclx::lp
