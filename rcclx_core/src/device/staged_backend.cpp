// Implementation of staged_backend.hpp.
#include "device/staged_backend.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "device/host_proxy.hpp"
#include "host/host_backend.hpp"

namespace rcclx {
namespace {

using StagedCall = gpu::HostProxy::Call;
using HostCopies = gpu::HostProxy::HostCopies;
using HostPart = gpu::HostProxy::HostPart;

// A pipelined call has at most this many pieces (each holds a slot, and the step kernel lists
// them).
constexpr size_t kMaxPieces = gpu::ProxyStep::kMaxPieces;

/// Elements [first, last) of `count` that piece `p` of `pieces` covers.
std::pair<size_t, size_t> pieceOf(size_t count, size_t p, size_t pieces) {
  return {count * p / pieces, count * (p + 1) / pieces};
}

const void* byteOffset(const void* base, size_t bytes) {
  return static_cast<const char*>(base) + bytes;
}
void* byteOffset(void* base, size_t bytes) { return static_cast<char*>(base) + bytes; }

/// Piece p of every rank's block of a pipelined all_gather's output or reduce_scatter's input,
/// each slice a region of its own, in rank order.
struct Slices {
  std::vector<size_t> counts;  ///< elements of each rank's slice
  std::vector<StagedCall::Region> regions;

  /// The slices' displacements from the first, in elements of `elem` bytes, where the host
  /// part finds them (the staging leaves gaps between regions).
  std::vector<size_t> displs(const HostCopies& at, size_t elem) const {
    std::vector<size_t> d(regions.size());
    for (size_t r = 0; r < regions.size(); ++r) {
      // An empty slice may share another's region: it points at nothing.
      d[r] = counts[r] == 0 ? 0 : static_cast<size_t>(at(regions[r]) - at(regions[0])) / elem;
    }
    return d;
  }
};

/// Adds piece `p` of `pieces` of the blocks (`counts`, `displs`, in elements of `elem` bytes) at
/// `base` to `call`, as inputs or outputs. Added before the call's own block (which may be the
/// same memory, in place: it then joins its slice's region), so the regions stay in rank order.
Slices stageSlices(StagedCall& call, const void* base, bool input,
                   const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                   size_t elem, size_t p, size_t pieces) {
  Slices s;
  for (size_t r = 0; r < counts.size(); ++r) {
    const auto [lo, hi] = pieceOf(counts[r], p, pieces);
    s.counts.push_back(hi - lo);
    s.regions.push_back(
        call.add(byteOffset(base, (displs[r] + lo) * elem), (hi - lo) * elem, input, !input));
  }
  return s;
}

/// Adds the GPU memory each transfer of `x` reads (`src`) and writes (`dst`) to `call`.
void stageExchange(StagedCall& call, const Exchange& x, std::vector<StagedCall::Region>& src,
                   std::vector<StagedCall::Region>& dst) {
  for (const Transfer& t : x) {
    const bool data = !t.token && t.bytes > 0;
    const bool reads = data && t.kind != Transfer::kRecv;
    const bool writes = data && t.kind != Transfer::kSend;
    src.push_back(reads ? call.in(t.src, t.bytes) : 0);
    dst.push_back(writes ? call.out(t.dst, t.bytes) : 0);
  }
}

class StagedBackend final : public DeviceBackend {
 public:
  StagedBackend(HostBackend& host, ctran::PeerGroup& group, int device, const Settings& settings)
      : host_(host), settings_(settings), proxy_(host, group, device, settings) {}

  Selection select(size_t bytes, DataType type, RedOp op,
                   const SelectorConfig& cfg) const override {
    return host_.select(bytes, type, op, cfg);
  }

  void allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                 const CallOptions& opts, void* stream) override {
    const size_t elem = dataTypeSize(type);
    const size_t pieces = piecesFor(count * elem, opts);
    StagedCall call(proxy_, stream, "all_reduce");
    std::vector<HostPart> parts;
    for (size_t p = 0; p < pieces; ++p) {
      if (p > 0) call.nextPiece();
      const auto [lo, hi] = pieceOf(count, p, pieces);
      const auto in = call.in(byteOffset(send, lo * elem), (hi - lo) * elem);
      const auto out = call.out(byteOffset(recv, lo * elem), (hi - lo) * elem);
      parts.push_back([=, n = hi - lo, o = queued(opts)](HostBackend& host, const HostCopies& at) {
        return host.allReduce(at(in), at(out), n, type, op, o);
      });
    }
    call.run(std::move(parts));
  }

  void reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
              double premulScalar, int root, void* stream) override {
    const size_t bytes = count * dataTypeSize(type);
    StagedCall call(proxy_, stream, "reduce");
    const auto in = call.in(send, bytes);
    const auto out = recv != nullptr ? call.out(recv, bytes) : 0;
    CallOptions opts;
    opts.premulScalar = premulScalar;
    const bool hasOutput = recv != nullptr;
    call.run([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
      return host.reduce(at(in), hasOutput ? at(out) : nullptr, count, type, op, root, o);
    });
  }

  void allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                  const std::vector<size_t>& displs, DataType type, const CallOptions& opts,
                  void* stream) override {
    const size_t elem = dataTypeSize(type);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    const size_t me = static_cast<size_t>(host_.rank());
    const size_t pieces = piecesFor(total * elem, opts);
    StagedCall call(proxy_, stream, "all_gather");
    if (pieces == 1) {
      const auto in = call.in(send, counts[me] * elem);
      const auto out = call.out(recv, total * elem);
      call.run([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
        return host.allGatherV(at(in), at(out), counts, displs, type, o);
      });
      return;
    }
    std::vector<HostPart> parts;
    for (size_t p = 0; p < pieces; ++p) {
      if (p > 0) call.nextPiece();
      const Slices out = stageSlices(call, recv, false, counts, displs, elem, p, pieces);
      const auto [lo, hi] = pieceOf(counts[me], p, pieces);
      const auto in = call.in(byteOffset(send, lo * elem), (hi - lo) * elem);
      parts.push_back([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
        return host.allGatherV(at(in), at(out.regions[0]), out.counts, out.displs(at, elem), type,
                               o);
      });
    }
    call.run(std::move(parts));
  }

  void reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, RedOp op,
                      const CallOptions& opts, void* stream) override {
    const size_t elem = dataTypeSize(type);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    const size_t me = static_cast<size_t>(host_.rank());
    const size_t pieces = piecesFor(total * elem, opts);
    StagedCall call(proxy_, stream, "reduce_scatter");
    if (pieces == 1) {
      const auto in = call.in(send, total * elem);
      const auto out = call.out(recv, counts[me] * elem);
      call.run([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
        return host.reduceScatterV(at(in), at(out), counts, displs, type, op, o);
      });
      return;
    }
    std::vector<HostPart> parts;
    for (size_t p = 0; p < pieces; ++p) {
      if (p > 0) call.nextPiece();
      const Slices in = stageSlices(call, send, true, counts, displs, elem, p, pieces);
      const auto [lo, hi] = pieceOf(counts[me], p, pieces);
      const auto out = call.out(byteOffset(recv, lo * elem), (hi - lo) * elem);
      parts.push_back([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
        return host.reduceScatterV(at(in.regions[0]), at(out), in.counts, in.displs(at, elem), type,
                                   op, o);
      });
    }
    call.run(std::move(parts));
  }

  void allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                const CallOptions& opts, void* stream) override {
    const size_t bytes = countPerRank * dataTypeSize(type) * host_.nranks();
    StagedCall call(proxy_, stream, "all_to_all");
    const auto in = call.in(send, bytes);
    const auto out = call.out(recv, bytes);
    call.run([=, o = queued(opts)](HostBackend& host, const HostCopies& at) {
      return host.allToAll(at(in), at(out), countPerRank, type, o);
    });
  }

  void allToAllV(const void* send, void* recv, const std::vector<size_t>& sendCounts,
                 const std::vector<size_t>& sendDispls, const std::vector<size_t>& recvCounts,
                 const std::vector<size_t>& recvDispls, DataType type, void* stream) override {
    exchange(allToAllVExchange(host_.rank(), host_.nranks(), send, sendCounts, sendDispls, recv,
                               recvCounts, recvDispls, dataTypeSize(type)),
             OpKind::kAllToAll, "all_to_all_v", stream);
  }

  void allToAllvDynamic(const DynamicCall& dyn, void* stream) override {
    const size_t n = static_cast<size_t>(host_.nranks());
    const size_t splitBytes = n * sizeof(int64_t);
    StagedCall call(proxy_, stream, "alltoallv_dynamic");
    const auto in = call.in(dyn.send, dyn.sendRows * dyn.rowBytes);
    const auto out = call.out(dyn.recv, dyn.capacityRows * dyn.rowBytes);
    const auto sendSplits = call.in(dyn.sendSplits, splitBytes);
    const auto sendOffsets = dyn.sendOffsets ? call.in(dyn.sendOffsets, splitBytes) : 0;
    const auto recvSplits =
        call.add(dyn.recvSplits, splitBytes, dyn.recvSplitsKnown, !dyn.recvSplitsKnown);
    const auto recvOffsets = dyn.recvOffsets ? call.out(dyn.recvOffsets, splitBytes) : 0;
    // Only the rows received are written: the rest of the output keeps what it held.
    call.copyBackPrefix(out, [recvSplits, n, rowBytes = dyn.rowBytes](const HostCopies& at) {
      const auto* splits = reinterpret_cast<const int64_t*>(at(recvSplits));
      const int64_t rows = std::accumulate(splits, splits + n, int64_t{0});
      return static_cast<size_t>(rows) * rowBytes;
    });
    call.run([=](HostBackend& host, const HostCopies& at) {
      DynamicCall staged = dyn;
      staged.send = at(in);
      staged.recv = at(out);
      staged.sendSplits = reinterpret_cast<const int64_t*>(at(sendSplits));
      staged.sendOffsets =
          dyn.sendOffsets ? reinterpret_cast<const int64_t*>(at(sendOffsets)) : nullptr;
      staged.recvSplits = reinterpret_cast<int64_t*>(at(recvSplits));
      staged.recvOffsets = dyn.recvOffsets ? reinterpret_cast<int64_t*>(at(recvOffsets)) : nullptr;
      return host.allToAllvDynamic(staged, /*async=*/true);
    });
  }

  std::string takeDynamicErrors() override { return ""; }  // raised by the call itself

  void exchange(const Exchange& x, OpKind kind, const char* what, void* stream) override {
    StagedCall call(proxy_, stream, what);
    std::vector<StagedCall::Region> src, dst;
    stageExchange(call, x, src, dst);
    call.run([=](HostBackend& host, const HostCopies& at) {
      Exchange staged = x;
      for (size_t i = 0; i < staged.size(); ++i) {
        Transfer& t = staged[i];
        if (t.token || t.bytes == 0) continue;
        if (t.kind != Transfer::kRecv) t.src = at(src[i]);
        if (t.kind != Transfer::kSend) t.dst = at(dst[i]);
      }
      return host.exchange(kind, [staged = std::move(staged)] { return staged; }, true);
    });
  }

  void sendRecv(const std::vector<DeviceTransfer>& ops, void* stream) override {
    StagedCall call(proxy_, stream, "send/recv");
    std::vector<StagedCall::Region> regions;
    for (const DeviceTransfer& t : ops) {
      regions.push_back(t.send ? call.in(t.buf, t.bytes) : call.out(t.buf, t.bytes));
    }
    call.run([=](HostBackend& host, const HostCopies& at) {
      host.groupStart();
      for (size_t i = 0; i < ops.size(); ++i) {
        host.pointToPoint({ops[i].send, ops[i].peer, at(regions[i]), ops[i].bytes}, true);
      }
      return host.groupEnd(true);
    });
  }

  void* allocSymmetric(size_t) override { throw noSymmetricBuffers("alloc_symmetric"); }
  void registerSymmetric(void*, size_t) override { throw noSymmetricBuffers("register_symmetric"); }
  void freeSymmetric(void*) override { throw noSymmetricBuffers("free_symmetric"); }
  void openSignals() override { throw noDeviceSignals("open_device_signals"); }
  void putSignal(int, const void*, size_t, const void*, size_t, void*) override {
    throw noDeviceSignals("device_put_signal");
  }
  void signal(int, void*) override { throw noDeviceSignals("device_signal"); }
  void waitSignals(const std::vector<uint64_t>&, void*) override {
    throw noDeviceSignals("device_wait_signals");
  }
  uint64_t symmetricCalls() const override { return 0; }
  size_t graphRegistrations() override { return 0; }
  void setTuning(const std::string&) override {}        // no kernels to tune
  size_t allocatedBytes() const override { return 0; }  // pinned host staging only
  std::string gpuSharing() const override {
    return "staged through the host: no kernel waits on a peer";
  }
  void reportKernelTimeout() override {}  // no kernels that wait

  void destroy(bool collective) override { proxy_.destroy(collective); }

 private:
  /// The pieces of a call whose largest buffer is `bytes` ("Pipelining" in host_proxy.hpp):
  /// RCCLX_STAGED_CHUNK_BYTES each, from two of them on; one when that is 0 or the call may
  /// take the low-precision path, whose blocks a split would move.
  size_t piecesFor(size_t bytes, const CallOptions& opts) const {
    const size_t chunk = settings_.stagedChunkBytes;
    if (chunk == 0 || bytes < 2 * chunk) return 1;
    if (opts.lowPrecision.value_or(settings_.lp.anyEnabled())) return 1;
    return std::min(kMaxPieces, (bytes + chunk - 1) / chunk);
  }

  /// The host part's options: queued on the executor behind the calls before it.
  static CallOptions queued(const CallOptions& opts) {
    CallOptions o = opts;
    o.async = true;
    o.stream.reset();
    return o;
  }

  ctran::InvalidUsage noDeviceSignals(const char* what) const {
    return ctran::InvalidUsage(ctran::strCat(
        what,
        ": one-sided calls on GPU memory need every rank on one host (the peers' memory "
        "mapped here), but this communicator spans hosts"));
  }

  ctran::InvalidUsage noSymmetricBuffers(const char* what) const {
    return ctran::InvalidUsage(
        ctran::strCat(what,
                      ": symmetric buffers need every rank on one host, but this "
                      "communicator spans hosts"));
  }

  HostBackend& host_;
  const Settings& settings_;
  gpu::HostProxy proxy_;
};

}  // namespace

std::unique_ptr<DeviceBackend> makeStagedBackend(HostBackend& host, ctran::PeerGroup& group,
                                                 int device, const Settings& settings) {
  return std::make_unique<StagedBackend>(host, group, device, settings);
}

}  // namespace rcclx
