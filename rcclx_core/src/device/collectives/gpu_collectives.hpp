// GpuCollectives: a communicator's GPU path for every collective but allreduce. It owns a
// DeviceWindow of device channels (channel_plan.hpp: staging per source rank, READY / ACK
// flags, chunk counters), turns each call into an ExchangePlan and enqueues one copy_blocks or
// reduce_blocks kernel on the caller's stream. Nothing here allocates or synchronises with the
// host per call, so calls can be captured in a CUDA graph. Compiled in builds with GPU code only.
//
// Counts and displacements are in elements and already validated by the Communicator (sizes,
// nulls, roots). Like NCCL, the ranks' calls must match: a transfer's byte count is the same on
// both of its ends (that is what keeps their chunk shapes, and so their flags, in step).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "device/collectives/channel_plan.hpp"
#include "device/device_backend.hpp"
#include "rcclx/types.hpp"
#include "transfer_plan.hpp"

namespace ctran {
class DeviceWindow;
}  // namespace ctran

namespace rcclx::gpu {

class DeviceResources;

class GpuCollectives {
 public:
  /// Collective over `group` (all ranks on one host): allocates `perPeerBytes` of staging per
  /// source rank on GPU `device` and maps every peer's.
  GpuCollectives(DeviceResources& resources, size_t perPeerBytes);
  GpuCollectives(const GpuCollectives&) = delete;
  GpuCollectives& operator=(const GpuCollectives&) = delete;

  /// Largest chunk one lane moves at a time (the staging slot).
  size_t slotBytes() const { return layout_.slotBytes; }

  /// Enqueues one copy kernel that moves `exchange` (transfer_plan.hpp): broadcast,
  /// all_gather_v, all_to_all_v, gather, scatter and barrier; `what` names the call in errors.
  void run(const Exchange& exchange, const char* what, void* stream);
  /// recv = op over ranks of block `rank` of send (blocks at displs, counts elements each).
  /// PREMUL_SUM multiplies this rank's input by `premulScalar` first (ignored otherwise).
  void reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, RedOp op,
                      double premulScalar, void* stream);
  /// recv (at root) = op over ranks of send; PREMUL_SUM as reduceScatterV.
  void reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
              double premulScalar, int root, void* stream);
  /// Runs `ops` together: the k-th send to and the k-th receive from each peer go in launch k
  /// (one launch when every peer appears at most once per direction). A send to this rank is
  /// matched with the receive from this rank of the same order and becomes a local copy.
  void sendRecv(const std::vector<DeviceTransfer>& ops, void* stream);

 private:
  /// A builder over this window; throws InvalidUsage naming `what` once it was released.
  PlanBuilder builder(const char* what) const;
  void launch(const ExchangePlan& plan, void* stream, const char* what);
  void launchReduce(const ExchangePlan& plan, DataType type, RedOp op, void* stream,
                    const char* what);

  DeviceResources& res_;
  int device_;
  int rank_;
  int nranks_;
  ctran::DeviceWindow* window_;  ///< the channels' staging, res_'s
  ChannelLayout layout_;
  ctran::WaitBound bound_;
};

}  // namespace rcclx::gpu
