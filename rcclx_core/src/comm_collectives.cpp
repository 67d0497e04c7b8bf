// Communicator: the collectives other than allreduce, and point-to-point calls. Each method
// validates its arguments on the caller's thread, then either enqueues the GPU path on the
// caller's stream (CallOptions::onDevice; gpu/gpu_collectives.hpp) or takes a tag and submits
// the host algorithm.
#include <cstring>
#include <memory>
#include <numeric>

#include "host/collectives/collectives.hpp"
#include "host/cpu/reduce.hpp"
#include "ctran/checks.hpp"
#include "host/executor.hpp"
#include "device/collectives/gpu_collectives.hpp"
#include "host/lp/low_precision.hpp"
#include "host/p2p/channels.hpp"
#include "rcclx/communicator.hpp"
#include "tags.hpp"

namespace rcclx {
namespace {

void checkBuffer(const void* p, size_t count, const char* what, const char* name) {
  CTRAN_CHECK(count == 0 || p != nullptr, ctran::InvalidArgument, what, ": ", name,
              " is null (count ", count, ")");
}

std::vector<size_t> prefixSums(const std::vector<size_t>& counts) {
  std::vector<size_t> displs(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) displs[i] = displs[i - 1] + counts[i - 1];
  return displs;
}

// PREMUL_SUM: a scaled copy of this rank's input (owned by the returned buffer); AVG and
// PREMUL_SUM then combine as SUM.
std::shared_ptr<std::vector<char>> premulCopy(const void* send, size_t count, DataType type,
                                              double scalar) {
  auto buf = std::make_shared<std::vector<char>>(count * dataTypeSize(type));
  cpu::scale(buf->data(), send, count, type, scalar);
  return buf;
}

RedOp combineOp(RedOp op) {
  return op == RedOp::kAvg || op == RedOp::kPreMulSum ? RedOp::kSum : op;
}

}  // namespace

WorkPtr Communicator::reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                             int root, const CallOptions& opts) {
  checkUsable("reduce");
  checkRoot(root, "reduce");
  checkRedOp(static_cast<int>(op), type, "reduce");
  checkBuffer(send, count, "reduce", "sendbuff");
  if (rank_ == root) checkBuffer(recv, count, "reduce", "recvbuff");
  if (opts.onDevice) {
    gpuCollectives("reduce").reduce(send, recv, count, type, op, opts.premulScalar, root,
                                    opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kReduce));
  Channels* ch = channels_.get();
  const int n = nranks_;
  const bool isRoot = rank_ == root;
  return submit(
      describeTag(tag),
      [=] {
        std::shared_ptr<std::vector<char>> scaled;
        const void* in = send;
        if (op == RedOp::kPreMulSum) {
          scaled = premulCopy(send, count, type, opts.premulScalar);
          in = scaled->data();
        }
        chainReduce(*ch, in, recv, count, type, combineOp(op), root, tag);
        if (op == RedOp::kAvg && isRoot) cpu::divide(recv, count, type, n);
      },
      opts.async);
}

WorkPtr Communicator::broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                                const CallOptions& opts) {
  checkUsable("broadcast");
  checkRoot(root, "broadcast");
  if (rank_ == root) checkBuffer(send, count, "broadcast", "sendbuff");
  checkBuffer(recv, count, "broadcast", "recvbuff");
  if (opts.onDevice) {
    gpuCollectives("broadcast").broadcast(send, recv, count, type, root, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kBroadcast));
  Channels* ch = channels_.get();
  size_t bytes = count * dataTypeSize(type);
  return submit(
      describeTag(tag), [=] { chainBroadcast(*ch, send, recv, bytes, root, tag); }, opts.async);
}

WorkPtr Communicator::allGather(const void* send, void* recv, size_t sendCount, DataType type,
                                const CallOptions& opts) {
  return allGatherV(send, sendCount, recv, std::vector<size_t>(nranks_, sendCount), type, opts);
}

WorkPtr Communicator::allGatherV(const void* send, size_t sendCount, void* recv,
                                 const std::vector<size_t>& recvCounts, DataType type,
                                 const CallOptions& opts) {
  checkUsable("all_gather");
  CTRAN_CHECK(recvCounts.size() == static_cast<size_t>(nranks_), ctran::InvalidArgument,
              "all_gather_v: recv_counts has ", recvCounts.size(), " entries for ", nranks_,
              " ranks");
  CTRAN_CHECK(recvCounts[rank_] == sendCount, ctran::InvalidArgument, "all_gather_v: recv_counts[",
              rank_, "]=", recvCounts[rank_], " differs from this rank's send count ", sendCount);
  checkBuffer(send, sendCount, "all_gather", "sendbuff");
  size_t total = std::accumulate(recvCounts.begin(), recvCounts.end(), size_t{0});
  checkBuffer(recv, total, "all_gather", "recvbuff");
  auto displs = prefixSums(recvCounts);
  if (opts.onDevice) {
    gpu::GpuCollectives& g = gpuCollectives("all_gather");
    if (auto plan =
            lp_->plan(lp::LpCollective::kAllGather, "all_gather on GPU", total * dataTypeSize(type),
                      type, RedOp::kSum, opts.lowPrecision, true)) {
      lp_->allGatherVOnDevice(*plan, send, recv, recvCounts, displs, type, opts.stream);
      return nullptr;
    }
    g.allGatherV(send, recv, recvCounts, displs, type, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kAllGather));
  if (auto plan = lp_->plan(lp::LpCollective::kAllGather, describeTag(tag),
                            total * dataTypeSize(type), type, RedOp::kSum, opts.lowPrecision)) {
    lp::LowPrecision* lp = lp_.get();
    auto at = prefixSums(recvCounts);
    return submit(
        describeTag(tag), [=] { lp->allGatherV(*plan, send, recv, recvCounts, at, type, tag); },
        opts.async);
  }
  Channels* ch = channels_.get();
  size_t elem = dataTypeSize(type);
  return submit(
      describeTag(tag), [=] { ringAllGatherV(*ch, send, recv, recvCounts, displs, elem, tag); },
      opts.async);
}

WorkPtr Communicator::reduceScatter(const void* send, void* recv, size_t recvCount, DataType type,
                                    RedOp op, const CallOptions& opts) {
  return reduceScatterV(send, recv, std::vector<size_t>(nranks_, recvCount), type, op, opts);
}

WorkPtr Communicator::reduceScatterV(const void* send, void* recv,
                                     const std::vector<size_t>& counts, DataType type, RedOp op,
                                     const CallOptions& opts) {
  checkUsable("reduce_scatter");
  checkRedOp(static_cast<int>(op), type, "reduce_scatter");
  CTRAN_CHECK(counts.size() == static_cast<size_t>(nranks_), ctran::InvalidArgument,
              "reduce_scatter_v: counts has ", counts.size(), " entries for ", nranks_, " ranks");
  size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
  checkBuffer(send, total, "reduce_scatter", "sendbuff");
  checkBuffer(recv, counts[rank_], "reduce_scatter", "recvbuff");
  auto displs = prefixSums(counts);
  if (opts.onDevice) {
    gpu::GpuCollectives& g = gpuCollectives("reduce_scatter");
    if (auto plan = lp_->plan(lp::LpCollective::kReduceScatter, "reduce_scatter on GPU",
                              total * dataTypeSize(type), type, op, opts.lowPrecision, true)) {
      lp_->reduceScatterVOnDevice(*plan, send, recv, counts, displs, type, op, opts.stream);
      return nullptr;
    }
    g.reduceScatterV(send, recv, counts, displs, type, op, opts.premulScalar, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kReduceScatter));
  if (auto plan = lp_->plan(lp::LpCollective::kReduceScatter, describeTag(tag),
                            total * dataTypeSize(type), type, op, opts.lowPrecision)) {
    lp::LowPrecision* lp = lp_.get();
    auto at = prefixSums(counts);
    return submit(
        describeTag(tag), [=] { lp->reduceScatterV(*plan, send, recv, counts, at, type, op, tag); },
        opts.async);
  }
  Channels* ch = channels_.get();
  const int n = nranks_;
  const size_t mine = counts[rank_];
  return submit(
      describeTag(tag),
      [=] {
        std::shared_ptr<std::vector<char>> scaled;
        const void* in = send;
        if (op == RedOp::kPreMulSum) {
          scaled = premulCopy(send, total, type, opts.premulScalar);
          in = scaled->data();
        }
        ringReduceScatterV(*ch, in, recv, counts, displs, type, combineOp(op), tag);
        if (op == RedOp::kAvg) cpu::divide(recv, mine, type, n);
      },
      opts.async);
}

WorkPtr Communicator::allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                               const CallOptions& opts) {
  // Low precision is decided here: all_to_all's equal blocks give every rank the same size to
  // decide on (all_to_all_v's counts may differ between ranks, so it stays full precision).
  checkUsable("all_to_all");
  const size_t total = countPerRank * nranks_;
  checkBuffer(send, total, "all_to_all", "sendbuff");
  checkBuffer(recv, total, "all_to_all", "recvbuff");
  if (opts.onDevice) {
    gpuCollectives("all_to_all");  // a communicator without a device fails here, clearly
    if (auto plan =
            lp_->plan(lp::LpCollective::kAllToAll, "all_to_all on GPU", total * dataTypeSize(type),
                      type, RedOp::kSum, opts.lowPrecision, true)) {
      lp_->allToAllOnDevice(*plan, send, recv, countPerRank, type, opts.stream);
      return nullptr;
    }
  } else {
    const std::string what = describeTag(makeTag(OpKind::kAllToAll, collSeq_ + 1));
    if (auto plan = lp_->plan(lp::LpCollective::kAllToAll, what, total * dataTypeSize(type), type,
                              RedOp::kSum, opts.lowPrecision)) {
      uint64_t tag = nextTag(static_cast<int>(OpKind::kAllToAll));
      lp::LowPrecision* lp = lp_.get();
      return submit(
          what, [=] { lp->allToAll(*plan, send, recv, countPerRank, type, tag); }, opts.async);
    }
  }
  std::vector<size_t> counts(nranks_, countPerRank);
  auto displs = prefixSums(counts);
  return allToAllV(send, counts, displs, recv, counts, displs, type, opts);
}

WorkPtr Communicator::allToAllV(const void* send, const std::vector<size_t>& sendCounts,
                                const std::vector<size_t>& sendDispls, void* recv,
                                const std::vector<size_t>& recvCounts,
                                const std::vector<size_t>& recvDispls, DataType type,
                                const CallOptions& opts) {
  checkUsable("all_to_all");
  const size_t n = static_cast<size_t>(nranks_);
  CTRAN_CHECK(sendCounts.size() == n && sendDispls.size() == n && recvCounts.size() == n &&
                  recvDispls.size() == n,
              ctran::InvalidArgument, "all_to_all_v: counts and displacements need ", n,
              " entries each (got ", sendCounts.size(), ", ", sendDispls.size(), ", ",
              recvCounts.size(), ", ", recvDispls.size(), ")");
  for (size_t p = 0; p < n; ++p) {
    checkBuffer(send, sendCounts[p], "all_to_all", "sendbuff");
    checkBuffer(recv, recvCounts[p], "all_to_all", "recvbuff");
  }
  if (opts.onDevice) {
    gpuCollectives("all_to_all")
        .allToAllV(send, sendCounts, sendDispls, recv, recvCounts, recvDispls, type, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kAllToAll));
  Channels* ch = channels_.get();
  const size_t elem = dataTypeSize(type);
  const int me = rank_;
  return submit(
      describeTag(tag),
      [=] {
        CTRAN_CHECK(sendCounts[me] == recvCounts[me], ctran::InvalidArgument, "all_to_all_v: rank ",
                    me, " sends ", sendCounts[me], " elements to itself but expects ",
                    recvCounts[me]);
        std::memmove(static_cast<char*>(recv) + recvDispls[me] * elem,
                     static_cast<const char*>(send) + sendDispls[me] * elem, sendCounts[me] * elem);
        std::vector<P2POp> ops;
        for (size_t p = 0; p < n; ++p) {
          if (static_cast<int>(p) == me) continue;
          ops.push_back({true, static_cast<int>(p),
                         const_cast<char*>(static_cast<const char*>(send)) + sendDispls[p] * elem,
                         sendCounts[p] * elem});
          ops.push_back({false, static_cast<int>(p),
                         static_cast<char*>(recv) + recvDispls[p] * elem, recvCounts[p] * elem});
        }
        runP2PGroup(*ch, ops, tag);
      },
      opts.async);
}

WorkPtr Communicator::gather(const void* send, void* recv, size_t sendCount, DataType type,
                             int root, const CallOptions& opts) {
  checkUsable("gather");
  checkRoot(root, "gather");
  checkBuffer(send, sendCount, "gather", "sendbuff");
  if (rank_ == root) checkBuffer(recv, sendCount * nranks_, "gather", "recvbuff");
  if (opts.onDevice) {
    gpuCollectives("gather").gather(send, recv, sendCount, type, root, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kGather));
  Channels* ch = channels_.get();
  const size_t bytes = sendCount * dataTypeSize(type);
  const int me = rank_, n = nranks_;
  return submit(
      describeTag(tag),
      [=] {
        std::vector<P2POp> ops;
        char* base = static_cast<char*>(recv);
        if (me == root) {
          std::memmove(base + me * bytes, send, bytes);
          for (int p = 0; p < n; ++p) {
            if (p != me) ops.push_back({false, p, base + p * bytes, bytes});
          }
        } else {
          ops.push_back({true, root, const_cast<char*>(static_cast<const char*>(send)), bytes});
        }
        runP2PGroup(*ch, ops, tag);
      },
      opts.async);
}

WorkPtr Communicator::scatter(const void* send, void* recv, size_t recvCount, DataType type,
                              int root, const CallOptions& opts) {
  checkUsable("scatter");
  checkRoot(root, "scatter");
  if (rank_ == root) checkBuffer(send, recvCount * nranks_, "scatter", "sendbuff");
  checkBuffer(recv, recvCount, "scatter", "recvbuff");
  if (opts.onDevice) {
    gpuCollectives("scatter").scatter(send, recv, recvCount, type, root, opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kScatter));
  Channels* ch = channels_.get();
  const size_t bytes = recvCount * dataTypeSize(type);
  const int me = rank_, n = nranks_;
  return submit(
      describeTag(tag),
      [=] {
        std::vector<P2POp> ops;
        const char* base = static_cast<const char*>(send);
        if (me == root) {
          std::memmove(recv, base + me * bytes, bytes);
          for (int p = 0; p < n; ++p) {
            if (p != me) ops.push_back({true, p, const_cast<char*>(base) + p * bytes, bytes});
          }
        } else {
          ops.push_back({false, root, static_cast<char*>(recv), bytes});
        }
        runP2PGroup(*ch, ops, tag);
      },
      opts.async);
}

WorkPtr Communicator::barrier(const CallOptions& opts) {
  checkUsable("barrier");
  if (opts.onDevice) {
    gpuCollectives("barrier").barrier(opts.stream);
    return nullptr;
  }
  uint64_t tag = nextTag(static_cast<int>(OpKind::kBarrier));
  Channels* ch = channels_.get();
  const int me = rank_, n = nranks_;
  return submit(
      describeTag(tag),
      [=] {
        std::vector<P2POp> ops;
        for (int p = 0; p < n; ++p) {
          if (p == me) continue;
          ops.push_back({true, p, nullptr, 0});
          ops.push_back({false, p, nullptr, 0});
        }
        runP2PGroup(*ch, ops, tag);
      },
      opts.async);
}

void Communicator::deviceP2P(const P2POp& op, void* stream, const char* what) {
  gpu::GpuCollectives& g = gpuCollectives(what);
  if (groupDepth_ == 0) {
    g.sendRecv({{op.isSend, op.peer, op.buffer, op.bytes}}, stream);
    return;
  }
  if (groupedDeviceP2P_.empty()) groupedDeviceStream_ = stream;
  CTRAN_CHECK(stream == groupedDeviceStream_, ctran::InvalidArgument, what,
              ": the sends and receives of a group on GPU buffers must use one stream (this ",
              "group's first used stream ", groupedDeviceStream_, ", this one ", stream, ")");
  groupedDeviceP2P_.push_back(op);
}

WorkPtr Communicator::send(const void* buf, size_t count, DataType type, int peer,
                           const CallOptions& opts) {
  P2POp op{true, peer, const_cast<char*>(static_cast<const char*>(buf)),
           count * dataTypeSize(type)};
  return submitP2P(op, count, opts, "send");
}

WorkPtr Communicator::recv(void* buf, size_t count, DataType type, int peer,
                           const CallOptions& opts) {
  P2POp op{false, peer, static_cast<char*>(buf), count * dataTypeSize(type)};
  return submitP2P(op, count, opts, "recv");
}

WorkPtr Communicator::submitP2P(const P2POp& op, size_t count, const CallOptions& opts,
                                const char* what) {
  checkUsable(what);
  CTRAN_CHECK(op.peer >= 0 && op.peer < nranks_, ctran::InvalidArgument, what, ": peer ", op.peer,
              " is out of range for a communicator of ", nranks_, " ranks");
  checkBuffer(op.buffer, count, what, "buff");
  if (opts.onDevice) {
    deviceP2P(op, opts.stream, what);
    return nullptr;
  }
  if (groupDepth_ > 0) {
    groupedP2P_.push_back(op);
    return nullptr;
  }
  Channels* ch = channels_.get();
  return executor_->submit(
      what,
      [=] {
        std::vector<P2POp> ops{op};
        runP2PGroup(*ch, ops, makeTag(OpKind::kSendRecv, 0));
      },
      opts.async);
}

}  // namespace rcclx
