// GpuAllReduce: the host side of a GPU allreduce: checks, the plan (plan.hpp), then what it says
// enqueued on the caller's stream, through the allreduce staging DeviceResources owns. Nothing
// here allocates or synchronises with the host per call, so calls can be captured in a CUDA
// graph. Compiled in builds with GPU code only.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "device/allreduce/launch.hpp"
#include "device/allreduce/plan.hpp"
#include "device/allreduce/tuning.hpp"
#include "device/device_resources.hpp"
#include "device/graph_registration.hpp"
#include "rcclx/types.hpp"
#include "selector.hpp"
#include "settings.hpp"

namespace ctran {
class DeviceWindow;
class PeerGroup;
}  // namespace ctran

namespace rcclx::gpu {

class GpuAllReduce {
 public:
  /// Collective (every rank of `resources`): takes the allreduce staging from `resources`:
  /// flat slots of RCCLX_GPU_FLAT_SLOT_BYTES per rank, RCCLX_GPU_STAGING_BYTES of two-shot
  /// staging and the line region for dda_tree calls up to RCCLX_GPU_LINES_BYTES, each twice
  /// (parity halves).
  /// `drainHostWork` runs before a captured output is mapped through the bootstrap.
  GpuAllReduce(DeviceResources& resources, const Settings& settings,
               std::function<void()> drainHostWork);
  GpuAllReduce(const GpuAllReduce&) = delete;
  GpuAllReduce& operator=(const GpuAllReduce&) = delete;

  /// Enqueues recv = op over ranks of send on `stream` (send and recv on this GPU; they may be
  /// equal). `algo` is kDdaFlat, kDdaTree or kDdaLarge; planGpuAllReduce() picks the kernel
  /// (logged at INFO). An output in a symmetric buffer, or a captured output the graph
  /// registrations map, takes the zero-copy two-shot where it pays. PREMUL_SUM multiplies this
  /// rank's input by `premulScalar` (ignored for other operators) before the sum. Throws
  /// InvalidArgument for a type or operator the kernels lack, CudaError when the launch fails.
  void run(AllReduceAlgo algo, const void* send, void* recv, size_t count, DataType type, RedOp op,
           double premulScalar, void* stream);

  /// Calls so far whose kernel stored its all-gather straight into the peers' outputs (symmetric
  /// buffers, or outputs mapped during graph capture).
  uint64_t zeroCopyCalls() const { return zeroCopyCalls_; }

 private:
  DeviceResources& res_;
  int nranks_;
  ctran::DeviceWindow* window_;  ///< the allreduce staging, res_'s
  StagingLayout layout_;
  uint64_t zeroCopyCalls_ = 0;
  std::function<void()> drainHostWork_;
};

}  // namespace rcclx::gpu
