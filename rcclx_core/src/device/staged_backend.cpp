// Implementation of staged_backend.hpp.
#include "device/staged_backend.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "host/host_backend.hpp"

namespace rcclx {
namespace {

// Host reductions vectorise best on aligned blocks.
constexpr size_t kRegionAlign = 256;

size_t alignUp(size_t n) { return (n + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }

gpuStream_t asStream(void* stream) { return static_cast<gpuStream_t>(stream); }

/// Pinned host memory reused by every call, grown on demand. The copies back of one call read
/// it after that call returned; the next call waits for them before it writes here.
class PinnedStaging {
 public:
  explicit PinnedStaging(int device) : device_(device) {}
  ~PinnedStaging() { release(); }
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  /// At least `bytes` of staging, once the last call's copies back are done.
  char* reserve(size_t bytes) {
    waitForCopiesBack();
    if (bytes <= bytes_) return base_;
    release();
    const size_t grown = std::max(bytes, 2 * bytes_);
    void* p = nullptr;
    CTRAN_GPU_CHECK(ctran::gpuHostAllocMapped(&p, grown), "pinned staging of ", grown,
                    " bytes for GPU collectives across hosts");
    base_ = static_cast<char*>(p);
    bytes_ = grown;
    return base_;
  }

  /// Marks the copies back just enqueued on `stream`.
  void copiesBackEnqueued(gpuStream_t stream) {
    if (event_ == nullptr) {
      CTRAN_GPU_CHECK(gpuEventCreateWithFlags(&event_, gpuEventDisableTiming),
                      "the staging event of GPU ", device_);
    }
    CTRAN_GPU_CHECK(gpuEventRecord(event_, stream), "the staging event of GPU ", device_);
    copiesBackPending_ = true;
  }

  void waitForCopiesBack() {
    if (!copiesBackPending_) return;
    CTRAN_GPU_CHECK(gpuEventSynchronize(event_), "copies back to GPU ", device_);
    copiesBackPending_ = false;
  }

  /// Frees everything, without throwing (at destroy, after a failure too).
  void release() noexcept {
    if (copiesBackPending_ && gpuEventSynchronize(event_) != gpuSuccess) (void)gpuGetLastError();
    copiesBackPending_ = false;
    if (base_ != nullptr && ctran::gpuHostFreeMapped(base_) != gpuSuccess) (void)gpuGetLastError();
    base_ = nullptr;
    bytes_ = 0;
    if (event_ != nullptr && gpuEventDestroy(event_) != gpuSuccess) (void)gpuGetLastError();
    event_ = nullptr;
  }

 private:
  int device_;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  gpuEvent_t event_ = nullptr;
  bool copiesBackPending_ = false;
};

/// One call's GPU memory as host copies: regions are added first, then run() copies the inputs
/// in, runs the host part on the copies and copies the outputs back.
class StagedCall {
 public:
  using Region = size_t;

  StagedCall(PinnedStaging& staging, int device, void* stream, const char* what)
      : staging_(staging), device_(device), stream_(asStream(stream)), what_(what) {}

  /// `bytes` of GPU memory at `gpu`, copied in before the host part (`input`) and back after it
  /// (`output`). The same memory added twice is one region with both directions.
  Region add(const void* gpu, size_t bytes, bool input, bool output) {
    for (Region r = 0; r < regions_.size(); ++r) {
      Entry& e = regions_[r];
      if (e.gpu == gpu && e.bytes == bytes) {
        e.input |= input;
        e.output |= output;
        return r;
      }
    }
    regions_.push_back({const_cast<void*>(gpu), bytes, input, output, bytes, 0});
    return regions_.size() - 1;
  }
  Region in(const void* gpu, size_t bytes) { return add(gpu, bytes, true, false); }
  Region out(void* gpu, size_t bytes) { return add(gpu, bytes, false, true); }

  /// The host copy of region `r`, valid inside the host part.
  char* host(Region r) const { return base_ + regions_[r].offset; }
  /// Copies back only the first `bytes` of output region `r` (set inside the host part).
  void copyBackPrefix(Region r, size_t bytes) {
    regions_[r].backBytes = std::min(bytes, regions_[r].bytes);
  }

  /// Waits for the stream's earlier work and the copies in, runs `hostPart`, enqueues the
  /// copies back. When `hostPart` throws, nothing is copied back.
  void run(const std::function<void()>& hostPart) {
    CTRAN_CHECK(!ctran::gpuStreamCapturing(stream_), ctran::InvalidUsage, what_,
                ": the communicator spans hosts, so its GPU collectives run through pinned host "
                "memory and cannot be captured into a graph (run this call eagerly)");
    ctran::GpuDeviceGuard on(device_, what_);
    size_t total = 0;
    for (Entry& e : regions_) {
      e.offset = total;
      total += alignUp(e.bytes);
    }
    base_ = staging_.reserve(total);
    for (const Entry& e : regions_) {
      if (e.input && e.bytes > 0) {
        CTRAN_GPU_CHECK(gpuMemcpyAsync(base_ + e.offset, e.gpu, e.bytes, gpuMemcpyDefault, stream_),
                        "copying an input of ", what_, " to host memory");
      }
    }
    CTRAN_GPU_CHECK(gpuStreamSynchronize(stream_), "waiting for the stream before ", what_);
    hostPart();
    for (const Entry& e : regions_) {
      if (e.output && e.backBytes > 0) {
        CTRAN_GPU_CHECK(
            gpuMemcpyAsync(e.gpu, base_ + e.offset, e.backBytes, gpuMemcpyDefault, stream_),
            "copying an output of ", what_, " back to the GPU");
      }
    }
    staging_.copiesBackEnqueued(stream_);
  }

 private:
  struct Entry {
    void* gpu;
    size_t bytes;
    bool input;
    bool output;
    size_t backBytes;  ///< what is copied back of an output
    size_t offset;     ///< in the staging
  };
  PinnedStaging& staging_;
  int device_;
  gpuStream_t stream_;
  const char* what_;
  std::vector<Entry> regions_;
  char* base_ = nullptr;
};

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
  StagedBackend(HostBackend& host, int device) : host_(host), device_(device), staging_(device) {}

  Selection select(size_t bytes, DataType type, RedOp op,
                   const SelectorConfig& cfg) const override {
    return host_.select(bytes, type, op, cfg);
  }

  void allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                 const CallOptions& opts, void* stream) override {
    const size_t bytes = count * dataTypeSize(type);
    StagedCall call(staging_, device_, stream, "all_reduce");
    const auto in = call.in(send, bytes);
    const auto out = call.out(recv, bytes);
    call.run([&] {
      onHost([&] {
        host_.allReduce(call.host(in), call.host(out), count, type, op, synchronous(opts));
      });
    });
  }

  void reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
              double premulScalar, int root, void* stream) override {
    const size_t bytes = count * dataTypeSize(type);
    StagedCall call(staging_, device_, stream, "reduce");
    const auto in = call.in(send, bytes);
    const auto out = recv != nullptr ? call.out(recv, bytes) : 0;
    CallOptions opts;
    opts.premulScalar = premulScalar;
    call.run([&] {
      onHost([&] {
        host_.reduce(call.host(in), recv != nullptr ? call.host(out) : nullptr, count, type, op,
                     root, opts);
      });
    });
  }

  void allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                  const std::vector<size_t>& displs, DataType type, const CallOptions& opts,
                  void* stream) override {
    const size_t elem = dataTypeSize(type);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    StagedCall call(staging_, device_, stream, "all_gather");
    const auto in = call.in(send, counts[host_.rank()] * elem);
    const auto out = call.out(recv, total * elem);
    call.run([&] {
      onHost([&] {
        host_.allGatherV(call.host(in), call.host(out), counts, displs, type, synchronous(opts));
      });
    });
  }

  void reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, RedOp op,
                      const CallOptions& opts, void* stream) override {
    const size_t elem = dataTypeSize(type);
    const size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    StagedCall call(staging_, device_, stream, "reduce_scatter");
    const auto in = call.in(send, total * elem);
    const auto out = call.out(recv, counts[host_.rank()] * elem);
    call.run([&] {
      onHost([&] {
        host_.reduceScatterV(call.host(in), call.host(out), counts, displs, type, op,
                             synchronous(opts));
      });
    });
  }

  void allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                const CallOptions& opts, void* stream) override {
    const size_t bytes = countPerRank * dataTypeSize(type) * host_.nranks();
    StagedCall call(staging_, device_, stream, "all_to_all");
    const auto in = call.in(send, bytes);
    const auto out = call.out(recv, bytes);
    call.run([&] {
      onHost([&] {
        host_.allToAll(call.host(in), call.host(out), countPerRank, type, synchronous(opts));
      });
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
    StagedCall call(staging_, device_, stream, "alltoallv_dynamic");
    const auto in = call.in(dyn.send, dyn.sendRows * dyn.rowBytes);
    const auto out = call.out(dyn.recv, dyn.capacityRows * dyn.rowBytes);
    const auto sendSplits = call.in(dyn.sendSplits, splitBytes);
    const auto sendOffsets = dyn.sendOffsets ? call.in(dyn.sendOffsets, splitBytes) : 0;
    const auto recvSplits =
        call.add(dyn.recvSplits, splitBytes, dyn.recvSplitsKnown, !dyn.recvSplitsKnown);
    const auto recvOffsets = dyn.recvOffsets ? call.out(dyn.recvOffsets, splitBytes) : 0;
    call.run([&] {
      DynamicCall staged = dyn;
      staged.send = call.host(in);
      staged.recv = call.host(out);
      staged.sendSplits = reinterpret_cast<const int64_t*>(call.host(sendSplits));
      staged.sendOffsets =
          dyn.sendOffsets ? reinterpret_cast<const int64_t*>(call.host(sendOffsets)) : nullptr;
      staged.recvSplits = reinterpret_cast<int64_t*>(call.host(recvSplits));
      staged.recvOffsets =
          dyn.recvOffsets ? reinterpret_cast<int64_t*>(call.host(recvOffsets)) : nullptr;
      onHost([&] { host_.allToAllvDynamic(staged, false); });
      // Only the rows received are written: the rest of the output keeps what it held.
      const int64_t rows = std::accumulate(staged.recvSplits, staged.recvSplits + n, int64_t{0});
      call.copyBackPrefix(out, static_cast<size_t>(rows) * dyn.rowBytes);
    });
  }

  std::string takeDynamicErrors() override { return ""; }  // raised by the call itself

  void exchange(const Exchange& x, OpKind kind, const char* what, void* stream) override {
    StagedCall call(staging_, device_, stream, what);
    std::vector<StagedCall::Region> src, dst;
    stageExchange(call, x, src, dst);
    call.run([&] {
      Exchange staged = x;
      for (size_t i = 0; i < staged.size(); ++i) {
        Transfer& t = staged[i];
        if (t.token || t.bytes == 0) continue;
        if (t.kind != Transfer::kRecv) t.src = call.host(src[i]);
        if (t.kind != Transfer::kSend) t.dst = call.host(dst[i]);
      }
      onHost([&] { host_.exchange(kind, [&staged] { return staged; }, false); });
    });
  }

  void sendRecv(const std::vector<DeviceTransfer>& ops, void* stream) override {
    StagedCall call(staging_, device_, stream, "send/recv");
    std::vector<StagedCall::Region> regions;
    for (const DeviceTransfer& t : ops) {
      regions.push_back(t.send ? call.in(t.buf, t.bytes) : call.out(t.buf, t.bytes));
    }
    call.run([&] {
      onHost([&] {
        host_.groupStart();
        for (size_t i = 0; i < ops.size(); ++i) {
          host_.pointToPoint({ops[i].send, ops[i].peer, call.host(regions[i]), ops[i].bytes},
                             false);
        }
        host_.groupEnd(false);
      });
    });
  }

  void* allocSymmetric(size_t) override { throw noSymmetricBuffers("alloc_symmetric"); }
  void registerSymmetric(void*, size_t) override { throw noSymmetricBuffers("register_symmetric"); }
  void freeSymmetric(void*) override { throw noSymmetricBuffers("free_symmetric"); }
  void openSignals() override { throw noDeviceSignals("open_device_signals"); }
  void put(int, const void*, size_t, const void*, size_t, void*) override {
    throw noDeviceSignals("device_put");
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

  void destroy(bool) override { staging_.release(); }

 private:
  /// Runs the host part outside any group the caller opened: its copies back need the results.
  void onHost(const std::function<void()>& fn) { host_.runOutsideGroup(fn); }

  static CallOptions synchronous(const CallOptions& opts) {
    CallOptions o = opts;
    o.async = false;
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
  int device_;
  PinnedStaging staging_;
};

}  // namespace

std::unique_ptr<DeviceBackend> makeStagedBackend(HostBackend& host, int device) {
  return std::make_unique<StagedBackend>(host, device);
}

}  // namespace rcclx
