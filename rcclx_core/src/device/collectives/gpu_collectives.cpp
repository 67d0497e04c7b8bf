// Implementation of gpu_collectives.hpp: each collective as a plan of send, receive, self and
// reduce roles (channel_plan.hpp) run by one copy_blocks or reduce_blocks kernel. The kernels
// are in copy_blocks.cu and reduce_blocks.cu.
#include "device/collectives/gpu_collectives.hpp"

#include <map>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/device_window.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "device/allreduce/gpu_allreduce.hpp"

#ifdef RCCLX_HAVE_GPU
#include "ctran/gpu_runtime.hpp"
#endif

namespace rcclx::gpu {

// Makes the communicator's GPU current for a call and restores the caller's afterwards.
class GpuCollectives::DeviceScope {
 public:
  DeviceScope(int device, const char* what) {
#ifdef RCCLX_HAVE_GPU
    CTRAN_GPU_CHECK(gpuGetDevice(&previous_), "", what);
    if (previous_ != device) CTRAN_GPU_CHECK(gpuSetDevice(device), "", what, ": GPU ", device);
    device_ = device;
#else
    (void)device;
    throw ctran::CudaError(ctran::strCat(what, " on GPU buffers: this build has no GPU code"));
#endif
  }
  ~DeviceScope() {
#ifdef RCCLX_HAVE_GPU
    if (previous_ >= 0 && previous_ != device_) (void)gpuSetDevice(previous_);  // best effort
#endif
  }

 private:
  int previous_ = -1;
  int device_ = -1;
};

GpuCollectives::GpuCollectives(ctran::PeerGroup& group, int device, size_t perPeerBytes)
    : device_(device), rank_(group.rank()), nranks_(group.nranks()) {
  layout_ = ChannelLayout::of(nranks_, perPeerBytes);
  const int64_t timeoutMs = ctran::knob::RCCLX_TIMEOUT_MS();
  timeoutNs_ = static_cast<uint64_t>(timeoutMs > 0 ? timeoutMs : 1) * 1000000ull;
  window_ =
      std::make_unique<ctran::DeviceWindow>(group, device, layout_.totalBytes, kChannelSignals);
}

GpuCollectives::~GpuCollectives() = default;

void GpuCollectives::destroy(bool collective) {
  if (window_ && !window_->destroyed()) window_->destroy(collective);
  window_.reset();
}

PlanBuilder GpuCollectives::builder(const char* what) const {
  CTRAN_CHECK(window_ != nullptr, ctran::InvalidUsage, what,
              " on GPU buffers: the GPU state was already released");
  return PlanBuilder(window_->handle(), layout_, timeoutNs_);
}

void GpuCollectives::launch(const ExchangePlan& plan, void* stream, const char* what) {
  if (plan.blocks == 0) return;  // nothing moves to or from this rank
  DeviceScope scope(device_, what);
#ifdef RCCLX_HAVE_GPU
  launchCopyBlocks(plan, stream);
#else
  (void)stream;
#endif
}

void GpuCollectives::launchReduce(const ExchangePlan& plan, DataType type, RedOp op, void* stream,
                                  const char* what) {
  if (plan.blocks == 0) return;
  DeviceScope scope(device_, what);
#ifdef RCCLX_HAVE_GPU
  launchReduceBlocks(plan, type, op, stream);
#else
  (void)stream, (void)type, (void)op;
#endif
}

void GpuCollectives::allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                                const std::vector<size_t>& displs, DataType type, void* stream) {
  const size_t elem = dataTypeSize(type);
  PlanBuilder b = builder("all_gather");
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.send(p, send, counts[rank_] * elem);
  }
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.recv(p, static_cast<char*>(recv) + displs[p] * elem, counts[p] * elem);
  }
  b.self(send, static_cast<char*>(recv) + displs[rank_] * elem, counts[rank_] * elem);
  launch(b.finish(), stream, "all_gather");
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

void GpuCollectives::allToAllV(const void* send, const std::vector<size_t>& sendCounts,
                               const std::vector<size_t>& sendDispls, void* recv,
                               const std::vector<size_t>& recvCounts,
                               const std::vector<size_t>& recvDispls, DataType type, void* stream) {
  const size_t elem = dataTypeSize(type);
  size_t moved = 0;
  for (int p = 0; p < nranks_; ++p) moved += sendCounts[p] + recvCounts[p];
  CTRAN_CHECK(moved == 0 || send != recv, ctran::InvalidArgument,
              "all_to_all on GPU buffers: sendbuff and recvbuff are the same buffer (in place "
              "is not supported; pass a separate output)");
  CTRAN_CHECK(sendCounts[rank_] == recvCounts[rank_], ctran::InvalidArgument, "all_to_all_v: rank ",
              rank_, " sends ", sendCounts[rank_], " elements to itself but expects ",
              recvCounts[rank_]);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  PlanBuilder b = builder("all_to_all");
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.send(p, in + sendDispls[p] * elem, sendCounts[p] * elem);
  }
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.recv(p, out + recvDispls[p] * elem, recvCounts[p] * elem);
  }
  b.self(in + sendDispls[rank_] * elem, out + recvDispls[rank_] * elem, sendCounts[rank_] * elem);
  launch(b.finish(), stream, "all_to_all");
}

void GpuCollectives::broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                               void* stream) {
  const size_t bytes = count * dataTypeSize(type);
  PlanBuilder b = builder("broadcast");
  if (rank_ == root) {
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_) b.send(p, send, bytes);
    }
    b.self(send, recv, bytes);
  } else {
    b.recv(root, recv, bytes);
  }
  launch(b.finish(), stream, "broadcast");
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

void GpuCollectives::gather(const void* send, void* recv, size_t count, DataType type, int root,
                            void* stream) {
  const size_t bytes = count * dataTypeSize(type);
  PlanBuilder b = builder("gather");
  if (rank_ == root) {
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_) b.recv(p, static_cast<char*>(recv) + p * bytes, bytes);
    }
    b.self(send, static_cast<char*>(recv) + rank_ * bytes, bytes);
  } else {
    b.send(root, send, bytes);
  }
  launch(b.finish(), stream, "gather");
}

void GpuCollectives::scatter(const void* send, void* recv, size_t count, DataType type, int root,
                             void* stream) {
  const size_t bytes = count * dataTypeSize(type);
  PlanBuilder b = builder("scatter");
  if (rank_ == root) {
    const char* in = static_cast<const char*>(send);
    for (int p = 0; p < nranks_; ++p) {
      if (p != rank_) b.send(p, in + p * bytes, bytes);
    }
    b.self(in + rank_ * bytes, recv, bytes);
  } else {
    b.recv(root, recv, bytes);
  }
  launch(b.finish(), stream, "scatter");
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

void GpuCollectives::barrier(void* stream) {
  PlanBuilder b = builder("barrier");
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.send(p, nullptr, 0, true);
  }
  for (int p = 0; p < nranks_; ++p) {
    if (p != rank_) b.recv(p, nullptr, 0, true);
  }
  launch(b.finish(), stream, "barrier");
}

}  // namespace rcclx::gpu
