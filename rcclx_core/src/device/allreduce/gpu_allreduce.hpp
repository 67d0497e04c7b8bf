// GpuAllReduce: a communicator's GPU allreduce state (the device window with its staging, the
// layout and launch shapes) and the host side of a call: checks, the plan (plan.hpp), then what
// it says enqueued on the caller's stream. Nothing here allocates or synchronises with the host per
// call, so calls can be captured in a CUDA graph. Builds without GPU code compile this too: the
// constructor then throws CudaError.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "device/allreduce/launch.hpp"
#include "device/allreduce/plan.hpp"
#include "device/allreduce/tuning.hpp"
#include "device/graph_registration.hpp"
#include "rcclx/types.hpp"
#include "selector.hpp"

namespace ctran {
class DeviceWindow;
class PeerGroup;
}  // namespace ctran

namespace rcclx::gpu {

class GpuAllReduce {
 public:
  /// Collective over `group` (all ranks on one host, one GPU each): allocates the staging on
  /// GPU `device`: flat slots of `flatBytes` per rank, `rawBytes` of two-shot staging and the
  /// line region for dda_tree calls up to `linesBytes`, each twice (parity halves). `tuning` is
  /// a Tuning::apply() spec ("" for the defaults). `graphRegister`: captured calls that would go
  /// zero-copy with a symmetric output map their ordinary output instead (graph_registration.hpp).
  GpuAllReduce(ctran::PeerGroup& group, int device, size_t flatBytes, size_t rawBytes,
               size_t linesBytes, const std::string& tuning, bool graphRegister);
  ~GpuAllReduce();
  GpuAllReduce(const GpuAllReduce&) = delete;
  GpuAllReduce& operator=(const GpuAllReduce&) = delete;

  int device() const { return device_; }

  /// Enqueues recv = op over ranks of send on `stream` (send and recv on this GPU; they may be
  /// equal). `algo` is kDdaFlat, kDdaTree or kDdaLarge; planGpuAllReduce() picks the kernel
  /// (logged at INFO). PREMUL_SUM multiplies this rank's input
  /// by `premulScalar` (ignored for other operators) before the sum. Throws InvalidArgument for
  /// a type or operator the kernels lack, CudaError when the launch fails.
  void run(AllReduceAlgo algo, const void* send, void* recv, size_t count, DataType type, RedOp op,
           double premulScalar, void* stream);

  /// Collective: `bytes` of device memory on this GPU that every rank maps (a symmetric
  /// buffer, see Communicator::allocSymmetric). Returns this rank's pointer (256-byte aligned,
  /// zeroed). Throws CudaError when allocation or mapping fails on any rank.
  void* allocSymmetric(size_t bytes);
  /// Collective: makes `bytes` of this rank's device memory at `ptr` (inside one allocation on
  /// this GPU, e.g. a torch tensor's) a symmetric buffer: every peer maps it; the memory stays
  /// the caller's. Throws InvalidArgument on every rank when any rank passes a different size,
  /// zero bytes, memory that is not device memory of this GPU or has no IPC handle, or a range
  /// overlapping one of its buffers; CudaError when the runtime fails to export or map it.
  void registerSymmetric(void* ptr, size_t bytes);
  /// Collective: frees a buffer allocSymmetric returned, or deregisters one registerSymmetric
  /// made (its memory stays the caller's); InvalidArgument for any other pointer.
  void freeSymmetric(void* ptr);
  /// Calls so far whose kernel stored its all-gather straight into the peers' outputs (symmetric
  /// buffers, or outputs mapped during graph capture).
  uint64_t zeroCopyCalls() const { return zeroCopyCalls_; }
  /// Whether a call on `stream` may map its output through the bootstrap (graph registration is
  /// on and the stream is capturing): the caller keeps other users of the bootstrap off it.
  bool mayRegisterOutput(void* stream) const {
    return graphOutputs_ != nullptr && graphOutputs_->capturing(stream);
  }
  /// Captured outputs mapped on every rank for graphs still alive.
  size_t graphRegistrations() { return graphOutputs_ ? graphOutputs_->held() : 0; }

  /// Replaces the launch shapes (applied to the defaults); for tuning tools.
  void setTuning(const std::string& spec);
  /// Releases the staging and the symmetric buffers (collective unless `collective` is false,
  /// as for abort).
  void destroy(bool collective);

 private:
  /// Collective: the sizes every rank passed to alloc / register (`what`) agree, and no rank
  /// reported a `problem` ("" for none); else InvalidArgument on every rank.
  void agreeOnSymmetric(const char* what, size_t bytes, const std::string& problem) const;
  /// Fills args.peerRecv when [recv, recv + bytes) lies in one symmetric buffer.
  void findSymmetricOutput(const void* recv, size_t bytes, LaunchArgs& args) const;

  ctran::PeerGroup* group_;
  int device_;
  int nranks_;
  std::unique_ptr<ctran::DeviceWindow> window_;
  /// allocSymmetric's and registerSymmetric's buffers
  std::vector<std::unique_ptr<ctran::DeviceWindow>> symmetric_;
  /// Outputs mapped during graph capture (null when RCCLX_GPU_GRAPH_REGISTER is off)
  std::unique_ptr<GraphRegistrations> graphOutputs_;
  StagingLayout layout_;
  Tuning tuning_;
  uint64_t timeoutNs_ = 0;
  uint64_t zeroCopyCalls_ = 0;
  bool pdlCapable_ = false;      ///< the GPU has programmatic dependent launch (sm_90 and later)
  bool linesAvailable_ = false;  ///< the line kernels run here (NVIDIA builds)
};

}  // namespace rcclx::gpu
