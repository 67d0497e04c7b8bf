// The front door: every collective of Communicator, as every front end calls it. Each method
// checks its arguments once (placement, types, counts, roots; errors name the argument and its
// value), then hands the call to the back-end where its buffers live: HostBackend for host
// memory, DeviceBackend for the communicator's GPU (enqueued on the call's stream).
#include <algorithm>
#include <numeric>

#include "comm_impl.hpp"
#include "ctran/checks.hpp"
#include "ctran/device.hpp"

namespace rcclx {
namespace {

using ctran::InvalidArgument;

/// One buffer argument of a call, by the name errors use.
struct Arg {
  const char* name;
  const Buffer* buf;  ///< null: not used by this rank (e.g. recvbuf off the root)
  bool output;
};

struct Located {
  MemoryKind kind;
  int device;
};

Located locate(const Buffer& b) {
  if (b.kind != MemoryKind::kUnknown) return {b.kind, b.device};
  const int d = ctran::device::pointerDevice(b.data);
  return d >= 0 ? Located{MemoryKind::kDevice, d} : Located{MemoryKind::kHost, -1};
}

std::string where(const Located& l) {
  return l.kind == MemoryKind::kDevice ? ctran::strCat("cuda:", l.device) : std::string("cpu");
}

void checkUsable(const Communicator::Impl& c, const char* op) {
  CTRAN_CHECK(!c.destroyed, ctran::InvalidUsage, op,
              ": the communicator was already destroyed or aborted");
  // A communicator that failed on any rank fails every later call at once, the same way; a
  // timeout its kernels recorded counts as soon as the stream drained, not a poll period later.
  if (c.gpu) c.gpu->reportKernelTimeout();
  c.group->checkFailedAtCallStart();
}

void checkRoot(const Communicator::Impl& c, int root, const char* op) {
  CTRAN_CHECK(root >= 0 && root < c.nranks, InvalidArgument, op, ": root ", root,
              " is out of range for a communicator of ", c.nranks, " ranks");
}

void checkCount(const Buffer& b, size_t want, const char* op, const char* name, const char* why) {
  if (b.count == want) return;
  throw InvalidArgument(ctran::strCat(op, ": ", name, " has ", b.count, " elements but needs ",
                                      want, " (", why, ")"));
}

/// `whole` holds one block of `block`'s count per rank (all_gather's recvbuf, gather's on the
/// root, reduce_scatter's and scatter's sendbuf).
void checkBlocks(const Buffer& whole, const Buffer& block, int nranks, const char* op,
                 const char* name) {
  const size_t n = static_cast<size_t>(nranks);
  if (whole.count == block.count * n) return;
  throw InvalidArgument(ctran::strCat(op, ": ", name, " has ", whole.count, " elements but needs ",
                                      block.count * n, " (", n, " ranks x ", block.count, ")"));
}

void checkSameType(const Buffer& send, const Buffer& recv, const char* op) {
  CTRAN_CHECK(send.type == recv.type, InvalidArgument, op, ": sendbuf is ", dataTypeName(send.type),
              " but recvbuf is ", dataTypeName(recv.type));
}

void checkEntries(const std::vector<size_t>& v, int n, const char* op, const char* name) {
  CTRAN_CHECK(v.size() == static_cast<size_t>(n), InvalidArgument, op, ": ", name, " has ",
              v.size(), " entries for ", n, " ranks");
}

void checkFits(const Buffer& b, const std::vector<size_t>& counts,
               const std::vector<size_t>& displs, const char* op, const char* name) {
  for (size_t i = 0; i < counts.size(); ++i) {
    CTRAN_CHECK(displs[i] + counts[i] <= b.count, InvalidArgument, op, ": ", name, " block ", i,
                " (displacement ", displs[i], ", count ", counts[i], ") ends past its ", b.count,
                " elements");
  }
}

std::vector<size_t> packed(const std::vector<size_t>& counts) {
  std::vector<size_t> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

size_t sum(const std::vector<size_t>& v) { return std::accumulate(v.begin(), v.end(), size_t{0}); }

/// Where a call runs: every buffer on the host, or every one on the communicator's GPU (with
/// the call's stream). Also checks each buffer is non-null when it holds elements and that
/// outputs are writable.
Placement place(const Communicator::Impl& c, const char* op, std::initializer_list<Arg> args,
                const CallOptions& opts) {
  checkUsable(c, op);
  const Arg* first = nullptr;
  Located firstAt{MemoryKind::kHost, -1};
  const Buffer* input = nullptr;
  for (const Arg& a : args) {
    if (a.buf == nullptr) continue;
    const Buffer& b = *a.buf;
    CTRAN_CHECK(b.count == 0 || b.data != nullptr, InvalidArgument, op, ": ", a.name,
                " is null (count ", b.count, ")");
    // An empty buffer given as NULL (a C caller's, or an empty torch tensor's) has no memory to
    // locate, so it has no say in where the call runs (with a stream: the GPU).
    if (b.count == 0 && b.data == nullptr) continue;
    if (a.output && !b.writable) {
      const bool inPlace = input != nullptr && input->data == b.data;
      throw InvalidArgument(ctran::strCat(op, ": ", inPlace ? "sendbuf" : a.name, " is read-only",
                                          inPlace ? " (in place, the call writes it)" : ""));
    }
    if (!a.output) input = &b;
    const Located at = locate(b);
    if (at.kind == MemoryKind::kDevice) {
      CTRAN_CHECK(c.device >= 0, InvalidArgument, op, ": ", a.name, " is on ", where(at),
                  " but the communicator was created without a device (pass device= when "
                  "creating it)");
      CTRAN_CHECK(at.device == c.device, InvalidArgument, op, ": ", a.name, " is on ", where(at),
                  " but the communicator runs on cuda:", c.device);
    }
    if (first == nullptr) {
      first = &a;
      firstAt = at;
      continue;
    }
    CTRAN_CHECK(at.kind == firstAt.kind, InvalidArgument, op, ": ", a.name, " is on ", where(at),
                " but ", first->name, " is on ", where(firstAt),
                " (a call's buffers must all be on the communicator's GPU or all on the host)");
  }
  const bool onDevice =
      first != nullptr ? firstAt.kind == MemoryKind::kDevice : opts.stream.has_value();  // barrier
  if (!onDevice) {
    CTRAN_CHECK(!opts.stream.has_value(), InvalidArgument, op,
                ": stream= applies to GPU buffers only, but the buffers are on the host");
    return {};
  }
  CTRAN_CHECK(c.gpu != nullptr, ctran::InvalidUsage, op,
              ": asked to run on a GPU (GPU buffers or stream=), but the communicator was "
              "created without a device (pass device= when creating it)");
  return {true, opts.stream.value_or(nullptr)};
}

/// Enqueues one call's GPU work now, or inside a group records it for groupEnd.
template <typename Enqueue>
void onDevice(Communicator::Impl& c, Enqueue&& enqueue) {
  if (c.groupDepth == 0) {
    enqueue();
    return;
  }
  c.groupedDeviceCalls.emplace_back(std::forward<Enqueue>(enqueue));
}

/// Runs the exchange `build()` makes where the call was placed: one copy kernel on the stream,
/// or the host back-end's transfers (built there, so an async call builds on its worker).
template <typename Build>
WorkPtr runExchange(Communicator::Impl& c, const Placement& at, OpKind kind, const char* op,
                    Build build, bool async) {
  if (at.onDevice) {
    onDevice(c, [&c, exchange = build(), kind, op, at] {
      c.gpu->exchange(exchange, kind, op, at.stream);
    });
    return nullptr;
  }
  return c.host->exchange(kind, build, async);
}

RedOp checkOp(RedOp op, DataType type, const char* name) {
  return checkRedOp(static_cast<int>(op), type, name);
}

}  // namespace

WorkPtr Communicator::allReduce(const Buffer& send, const Buffer& recv, RedOp op,
                                const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "all_reduce";
  const Placement at = place(c, o, {{"sendbuf", &send, false}, {"recvbuf", &recv, true}}, opts);
  checkSameType(send, recv, o);
  checkCount(recv, send.count, o, "recvbuf", "the same as sendbuf");
  checkOp(op, send.type, o);
  if (at.onDevice) {
    onDevice(c, [&c, send, recv, op, opts, at] {
      c.gpu->allReduce(send.data, recv.data, send.count, send.type, op, opts, at.stream);
    });
    return nullptr;
  }
  return c.host->allReduce(send.data, recv.data, send.count, send.type, op, opts);
}

WorkPtr Communicator::reduce(const Buffer& send, const Buffer& recv, RedOp op, int root,
                             const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "reduce";
  checkUsable(c, o);
  checkRoot(c, root, o);
  const bool isRoot = c.rank == root;
  const Placement at =
      place(c, o, {{"sendbuf", &send, false}, {"recvbuf", isRoot ? &recv : nullptr, true}}, opts);
  if (isRoot) {
    checkSameType(send, recv, o);
    checkCount(recv, send.count, o, "recvbuf", "the same as sendbuf");
  }
  checkOp(op, send.type, o);
  void* out = isRoot ? recv.data : nullptr;
  if (at.onDevice) {
    onDevice(c, [&c, send, out, op, scalar = opts.premulScalar, root, at] {
      c.gpu->reduce(send.data, out, send.count, send.type, op, scalar, root, at.stream);
    });
    return nullptr;
  }
  return c.host->reduce(send.data, out, send.count, send.type, op, root, opts);
}

WorkPtr Communicator::broadcast(const Buffer& send, const Buffer& recv, int root,
                                const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "broadcast";
  checkUsable(c, o);
  checkRoot(c, root, o);
  const bool isRoot = c.rank == root;
  const bool hasSend = isRoot || send.data != nullptr;
  const Placement at =
      place(c, o, {{"sendbuf", hasSend ? &send : nullptr, false}, {"recvbuf", &recv, true}}, opts);
  if (hasSend) {
    checkSameType(send, recv, o);
    checkCount(recv, send.count, o, "recvbuf", "the same as sendbuf");
  }
  if (at.onDevice) {
    onDevice(c,
             [&c, x = broadcastExchange(c.rank, c.nranks, root, send.data, recv.data, recv.bytes()),
              o, at] { c.gpu->exchange(x, OpKind::kBroadcast, o, at.stream); });
    return nullptr;
  }
  return c.host->broadcast(send.data, recv.data, recv.bytes(), root, opts.async);
}

WorkPtr Communicator::allGather(const Buffer& send, const Buffer& recv, const CallOptions& opts) {
  const char* o = "all_gather";
  checkUsable(*impl_, o);
  checkBlocks(recv, send, impl_->nranks, o, "recvbuf");
  return allGatherV(send, recv, std::vector<size_t>(impl_->nranks, send.count), opts);
}

WorkPtr Communicator::allGatherV(const Buffer& send, const Buffer& recv,
                                 const std::vector<size_t>& recvCounts, const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "all_gather_v";
  const Placement at = place(c, o, {{"sendbuf", &send, false}, {"recvbuf", &recv, true}}, opts);
  checkSameType(send, recv, o);
  checkEntries(recvCounts, c.nranks, o, "recv_counts");
  CTRAN_CHECK(recvCounts[c.rank] == send.count, InvalidArgument, o, ": recv_counts[", c.rank,
              "]=", recvCounts[c.rank], " differs from this rank's send count ", send.count);
  checkCount(recv, sum(recvCounts), o, "recvbuf", "the sum of recv_counts");
  const auto displs = packed(recvCounts);
  if (at.onDevice) {
    onDevice(c, [&c, send, recv, recvCounts, displs, opts, at] {
      c.gpu->allGatherV(send.data, recv.data, recvCounts, displs, send.type, opts, at.stream);
    });
    return nullptr;
  }
  return c.host->allGatherV(send.data, recv.data, recvCounts, displs, send.type, opts);
}

WorkPtr Communicator::reduceScatter(const Buffer& send, const Buffer& recv, RedOp op,
                                    const CallOptions& opts) {
  const char* o = "reduce_scatter";
  checkUsable(*impl_, o);
  checkBlocks(send, recv, impl_->nranks, o, "sendbuf");
  return reduceScatterV(send, recv, std::vector<size_t>(impl_->nranks, recv.count), op, opts);
}

WorkPtr Communicator::reduceScatterV(const Buffer& send, const Buffer& recv,
                                     const std::vector<size_t>& counts, RedOp op,
                                     const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "reduce_scatter_v";
  const Placement at = place(c, o, {{"sendbuf", &send, false}, {"recvbuf", &recv, true}}, opts);
  checkSameType(send, recv, o);
  checkEntries(counts, c.nranks, o, "counts");
  checkCount(send, sum(counts), o, "sendbuf", "the sum of counts");
  checkCount(recv, counts[c.rank], o, "recvbuf", "counts[rank]");
  checkOp(op, send.type, o);
  const auto displs = packed(counts);
  if (at.onDevice) {
    onDevice(c, [&c, send, recv, counts, displs, op, opts, at] {
      c.gpu->reduceScatterV(send.data, recv.data, counts, displs, send.type, op, opts, at.stream);
    });
    return nullptr;
  }
  return c.host->reduceScatterV(send.data, recv.data, counts, displs, send.type, op, opts);
}

WorkPtr Communicator::allToAll(const Buffer& send, const Buffer& recv, const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "all_to_all";
  const Placement at = place(c, o, {{"sendbuf", &send, false}, {"recvbuf", &recv, true}}, opts);
  checkSameType(send, recv, o);
  const size_t n = static_cast<size_t>(c.nranks);
  CTRAN_CHECK(send.count % n == 0, InvalidArgument, o, ": sendbuf has ", send.count,
              " elements, not a multiple of ", n, " ranks");
  checkCount(recv, send.count, o, "recvbuf", "the same as sendbuf");
  if (at.onDevice) {
    onDevice(c, [&c, send, recv, n, opts, at] {
      c.gpu->allToAll(send.data, recv.data, send.count / n, send.type, opts, at.stream);
    });
    return nullptr;
  }
  return c.host->allToAll(send.data, recv.data, send.count / n, send.type, opts);
}

WorkPtr Communicator::allToAllV(const Buffer& send, const Buffer& recv,
                                const std::vector<size_t>& sendCounts,
                                const std::vector<size_t>& sendDispls,
                                const std::vector<size_t>& recvCounts,
                                const std::vector<size_t>& recvDispls, const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "all_to_all_v";
  const Placement at = place(c, o, {{"sendbuf", &send, false}, {"recvbuf", &recv, true}}, opts);
  checkSameType(send, recv, o);
  checkEntries(sendCounts, c.nranks, o, "send_counts");
  checkEntries(recvCounts, c.nranks, o, "recv_counts");
  const auto sd = sendDispls.empty() ? packed(sendCounts) : sendDispls;
  const auto rd = recvDispls.empty() ? packed(recvCounts) : recvDispls;
  checkEntries(sd, c.nranks, o, "send_displs");
  checkEntries(rd, c.nranks, o, "recv_displs");
  checkFits(send, sendCounts, sd, o, "sendbuf");
  checkFits(recv, recvCounts, rd, o, "recvbuf");
  CTRAN_CHECK(sendCounts[c.rank] == recvCounts[c.rank], InvalidArgument, o, ": rank ", c.rank,
              " sends ", sendCounts[c.rank], " elements to itself but expects ",
              recvCounts[c.rank]);
  const size_t elem = dataTypeSize(send.type);
  if (at.onDevice) {
    onDevice(c, [&c, send, recv, sendCounts, sd, recvCounts, rd, at] {
      c.gpu->allToAllV(send.data, recv.data, sendCounts, sd, recvCounts, rd, send.type, at.stream);
    });
    return nullptr;
  }
  return c.host->allToAllV(send.data, recv.data, sendCounts, sd, recvCounts, rd, elem, opts.async);
}

namespace {

/// A split array of alltoallv_dynamic: size() int64 entries (`optional`: may be absent).
void checkSplits(const Buffer& b, int nranks, const char* name, bool optional) {
  const char* o = "alltoallv_dynamic";
  if (optional && b.data == nullptr) return;
  CTRAN_CHECK(b.type == DataType::kInt64, InvalidArgument, o, ": ", name, " is ",
              dataTypeName(b.type), " but must be int64");
  CTRAN_CHECK(b.count == static_cast<size_t>(nranks), InvalidArgument, o, ": ", name, " has ",
              b.count, " entries for ", nranks, " ranks");
}

void checkRows(const Buffer& b, size_t rowElems, const char* name) {
  CTRAN_CHECK(b.count % rowElems == 0, InvalidArgument, "alltoallv_dynamic: ", name, " has ",
              b.count, " elements, not a multiple of row_elems ", rowElems);
}

}  // namespace

WorkPtr Communicator::allToAllvDynamic(const Buffer& send, const Buffer& recv,
                                       const DynamicSplits& sp, const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "alltoallv_dynamic";
  const Buffer* sendOffsets = sp.sendOffsets.data != nullptr ? &sp.sendOffsets : nullptr;
  const Buffer* recvOffsets = sp.recvOffsets.data != nullptr ? &sp.recvOffsets : nullptr;
  const Placement at = place(c, o,
                             {{"input", &send, false},
                              {"output", &recv, true},
                              {"input_split_sizes", &sp.sendSplits, false},
                              {"output_split_sizes", &sp.recvSplits, !sp.recvSplitsKnown},
                              {"input_offsets", sendOffsets, false},
                              {"output_offsets", recvOffsets, true}},
                             opts);
  checkSameType(send, recv, o);
  CTRAN_CHECK(sp.rowElems > 0, InvalidArgument, o, ": row_elems is 0 (a row needs an element)");
  checkRows(send, sp.rowElems, "input");
  checkRows(recv, sp.rowElems, "output");
  checkSplits(sp.sendSplits, c.nranks, "input_split_sizes", false);
  checkSplits(sp.recvSplits, c.nranks, "output_split_sizes", false);
  checkSplits(sp.sendOffsets, c.nranks, "input_offsets", true);
  checkSplits(sp.recvOffsets, c.nranks, "output_offsets", true);
  CTRAN_CHECK(send.count == 0 || send.data != recv.data, InvalidArgument, o,
              ": input and output are the same memory (the call cannot run in place)");
  DynamicCall call;
  call.send = send.data;
  call.recv = recv.data;
  call.sendRows = send.count / sp.rowElems;
  call.capacityRows = std::min(recv.count / sp.rowElems, sp.maxRecvRows);
  call.rowBytes = sp.rowElems * dataTypeSize(send.type);
  call.sendSplits = static_cast<const int64_t*>(sp.sendSplits.data);
  call.sendOffsets = static_cast<const int64_t*>(sp.sendOffsets.data);
  call.recvSplits = static_cast<int64_t*>(sp.recvSplits.data);
  call.recvOffsets = static_cast<int64_t*>(sp.recvOffsets.data);
  call.recvSplitsKnown = sp.recvSplitsKnown;
  if (at.onDevice) {
    onDevice(c, [&c, call, at] { c.gpu->allToAllvDynamic(call, at.stream); });
    return nullptr;
  }
  return c.host->allToAllvDynamic(call, opts.async);
}

void Communicator::checkAllToAllvDynamic() {
  Impl& c = *impl_;
  if (c.gpu == nullptr) return;
  const std::string recorded = c.gpu->takeDynamicErrors();
  if (!recorded.empty()) throw InvalidArgument(recorded);
}

WorkPtr Communicator::gather(const Buffer& send, const Buffer& recv, int root,
                             const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "gather";
  checkUsable(c, o);
  checkRoot(c, root, o);
  const bool isRoot = c.rank == root;
  const Placement at =
      place(c, o, {{"sendbuf", &send, false}, {"recvbuf", isRoot ? &recv : nullptr, true}}, opts);
  if (isRoot) {
    checkSameType(send, recv, o);
    checkBlocks(recv, send, c.nranks, o, "recvbuf");
  }
  const int me = c.rank, n = c.nranks;
  const void* in = send.data;
  void* out = isRoot ? recv.data : nullptr;
  const size_t bytes = send.bytes();
  return runExchange(
      c, at, OpKind::kGather, o, [=] { return gatherExchange(me, n, root, in, out, bytes); },
      opts.async);
}

WorkPtr Communicator::scatter(const Buffer& send, const Buffer& recv, int root,
                              const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "scatter";
  checkUsable(c, o);
  checkRoot(c, root, o);
  const bool isRoot = c.rank == root;
  const Placement at =
      place(c, o, {{"recvbuf", &recv, true}, {"sendbuf", isRoot ? &send : nullptr, false}}, opts);
  if (isRoot) {
    checkSameType(send, recv, o);
    checkBlocks(send, recv, c.nranks, o, "sendbuf");
  }
  const int me = c.rank, n = c.nranks;
  const void* in = isRoot ? send.data : nullptr;
  void* out = recv.data;
  const size_t bytes = recv.bytes();
  return runExchange(
      c, at, OpKind::kScatter, o, [=] { return scatterExchange(me, n, root, in, out, bytes); },
      opts.async);
}

WorkPtr Communicator::barrier(const CallOptions& opts) {
  Impl& c = *impl_;
  const char* o = "barrier";
  const Placement at = place(c, o, {}, opts);
  const int me = c.rank, n = c.nranks;
  return runExchange(
      c, at, OpKind::kBarrier, o, [=] { return barrierExchange(me, n); }, opts.async);
}

namespace {

/// Validates and runs (or records, inside a group) one send or receive.
WorkPtr pointToPoint(Communicator::Impl& c, bool isSend, const Buffer& buf, int peer,
                     const CallOptions& opts) {
  const char* o = isSend ? "send" : "recv";
  const Placement at = place(c, o, {{"buf", &buf, !isSend}}, opts);
  CTRAN_CHECK(peer >= 0 && peer < c.nranks, InvalidArgument, o, ": peer ", peer,
              " is out of range for a communicator of ", c.nranks, " ranks");
  if (!at.onDevice)
    return c.host->pointToPoint({isSend, peer, static_cast<char*>(buf.data), buf.bytes()},
                                opts.async);
  const DeviceTransfer t{isSend, peer, buf.data, buf.bytes()};
  if (c.groupDepth == 0) {
    c.gpu->sendRecv({t}, at.stream);
    return nullptr;
  }
  if (c.groupedDeviceP2P.empty()) c.groupedDeviceStream = at.stream;
  CTRAN_CHECK(at.stream == c.groupedDeviceStream, InvalidArgument, o,
              ": the sends and receives of a group on GPU buffers must use one stream (this "
              "group's first used stream ",
              c.groupedDeviceStream, ", this one ", at.stream, ")");
  c.groupedDeviceP2P.push_back(t);
  return nullptr;
}

}  // namespace

WorkPtr Communicator::send(const Buffer& buf, int peer, const CallOptions& opts) {
  return pointToPoint(*impl_, true, buf, peer, opts);
}

WorkPtr Communicator::recv(const Buffer& buf, int peer, const CallOptions& opts) {
  return pointToPoint(*impl_, false, buf, peer, opts);
}

}  // namespace rcclx
