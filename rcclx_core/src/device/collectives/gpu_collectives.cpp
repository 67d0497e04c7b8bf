// Implementation of gpu_collectives.hpp: each collective as a plan of send, receive, self and
// reduce roles (channel_plan.hpp) run by one copy_blocks or reduce_blocks kernel. The kernels
// are in copy_blocks.cu and reduce_blocks.cu.
#include "device/collectives/gpu_collectives.hpp"

#include <map>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/device_window.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "device/allreduce/gpu_allreduce.hpp"
#include "device/device_resources.hpp"

namespace rcclx::gpu {

GpuCollectives::GpuCollectives(DeviceResources& resources, size_t perPeerBytes)
    : res_(resources),
      device_(resources.device()),
      rank_(resources.rank()),
      nranks_(resources.nranks()),
      bound_(resources.waitBound()) {
  layout_ = ChannelLayout::of(nranks_, perPeerBytes);
  window_ = &res_.staging(Staging::kChannels, layout_.totalBytes, kChannelSignals, "collectives");
}

PlanBuilder GpuCollectives::builder(const char* what) const {
  CTRAN_CHECK(!res_.released(), ctran::InvalidUsage, what,
              " on GPU buffers: the GPU state was already released");
  return PlanBuilder(window_->handle(), layout_, bound_, channelBlocks(res_.coResidency()));
}

void GpuCollectives::launch(const ExchangePlan& plan, void* stream, const char* what) {
  if (plan.blocks == 0) return;  // nothing moves to or from this rank
  ctran::GpuDeviceGuard guard(device_, what);
  launchCopyBlocks(plan, stream);
}

void GpuCollectives::launchReduce(const ExchangePlan& plan, DataType type, RedOp op, void* stream,
                                  const char* what) {
  if (plan.blocks == 0) return;
  ctran::GpuDeviceGuard guard(device_, what);
  launchReduceBlocks(plan, type, op, stream);
}

void GpuCollectives::run(const Exchange& exchange, const char* what, void* stream) {
  PlanBuilder b = builder(what);
  for (const Transfer& t : exchange) {
    switch (t.kind) {
      case Transfer::kSend: b.send(t.peer, t.src, t.bytes, t.token); break;
      case Transfer::kRecv: b.recv(t.peer, t.dst, t.bytes, t.token); break;
      case Transfer::kSelf: b.self(t.src, t.dst, t.bytes); break;
    }
  }
  launch(b.finish(), stream, what);
}

void GpuCollectives::reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                                    const std::vector<size_t>& displs, DataType type, RedOp op,
                                    double premulScalar, void* stream) {
  std::string why;
  CTRAN_CHECK(gpuSupports(type, op, &why), ctran::InvalidArgument, "reduce_scatter: ", why);
  const size_t elem = dataTypeSize(type);
  const char* in = static_cast<const char*>(send);
  PlanBuilder b = builder("reduce_scatter");
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.send(p, in + displs[p] * elem, counts[p] * elem);
  }
  b.reduce(in + displs[rank_] * elem, recv, counts[rank_] * elem, op == RedOp::kAvg ? nranks_ : 1);
  b.premulScalar(premulScalar);
  launchReduce(b.finish(), type, op, stream, "reduce_scatter");
}

void GpuCollectives::reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                            double premulScalar, int root, void* stream) {
  std::string why;
  CTRAN_CHECK(gpuSupports(type, op, &why), ctran::InvalidArgument, "reduce: ", why);
  const size_t bytes = count * dataTypeSize(type);
  PlanBuilder b = builder("reduce");
  if (rank_ == root) {
    b.reduce(send, recv, bytes, op == RedOp::kAvg ? nranks_ : 1);
  } else {
    b.send(root, send, bytes);
  }
  b.premulScalar(premulScalar);
  launchReduce(b.finish(), type, op, stream, "reduce");
}

void GpuCollectives::sendRecv(const std::vector<DeviceTransfer>& ops, void* stream) {
  // Round k holds the k-th send to and the k-th receive from each peer.
  std::map<std::pair<int, bool>, int> seen;  // (peer, send) -> ops so far
  std::vector<std::vector<DeviceTransfer>> rounds;
  std::vector<DeviceTransfer> selfSends, selfRecvs;
  for (const DeviceTransfer& op : ops) {
    CTRAN_CHECK(op.peer >= 0 && op.peer < nranks_, ctran::InvalidArgument,
                op.send ? "send" : "recv", ": peer ", op.peer,
                " is out of range for a communicator of ", nranks_, " ranks");
    if (op.peer == rank_) {
      (op.send ? selfSends : selfRecvs).push_back(op);
      continue;
    }
    const int k = seen[{op.peer, op.send}]++;
    if (static_cast<int>(rounds.size()) <= k) rounds.resize(k + 1);
    rounds[k].push_back(op);
  }
  CTRAN_CHECK(selfSends.size() == selfRecvs.size(), ctran::InvalidArgument, "send/recv on GPU ",
              "buffers: rank ", rank_, " sends to itself ", selfSends.size(),
              " times but receives from itself ", selfRecvs.size(),
              " times (a send to self needs its recv in the same group)");
  if (rounds.empty()) rounds.resize(selfSends.empty() ? 0 : 1);
  for (size_t k = 0; k < rounds.size(); ++k) {
    PlanBuilder b = builder("send/recv");
    for (const DeviceTransfer& op : rounds[k]) {
      if (op.send) b.send(op.peer, op.buf, op.bytes);
    }
    for (const DeviceTransfer& op : rounds[k]) {
      if (!op.send) b.recv(op.peer, op.buf, op.bytes);
    }
    if (k == 0) {
      for (size_t i = 0; i < selfSends.size(); ++i) {
        CTRAN_CHECK(selfSends[i].bytes == selfRecvs[i].bytes, ctran::InvalidArgument,
                    "send/recv on GPU buffers: rank ", rank_, " sends ", selfSends[i].bytes,
                    " bytes to itself but receives ", selfRecvs[i].bytes);
        b.self(selfSends[i].buf, selfRecvs[i].buf, selfSends[i].bytes);
      }
    }
    launch(b.finish(), stream, "send/recv");
  }
}

}  // namespace rcclx::gpu
