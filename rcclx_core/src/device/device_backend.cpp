// The device back-end of a build with GPU code, ranks on one host: the allreduce kernels
// (GpuAllReduce), the copy and reduce kernels of the other collectives (GpuCollectives) and the
// low-precision kernels (GpuLowPrecision), behind DeviceBackend, all staging through the one
// DeviceResources. Ranks on several hosts get the staged back-end instead (create()).
#include "device/device_backend.hpp"

#include <algorithm>
#include <functional>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "device/allreduce/gpu_allreduce.hpp"
#include "device/alltoallv_dynamic/gpu_alltoallv_dynamic.hpp"
#include "device/collectives/gpu_collectives.hpp"
#include "device/device_resources.hpp"
#include "device/lp/gpu_low_precision.hpp"
#include "device/staged_backend.hpp"
#include "device/stream_order.hpp"
#include "host/host_backend.hpp"
#include "lp/lp_policy.hpp"

namespace rcclx {
namespace {

class GpuBackend final : public DeviceBackend {
 public:
  GpuBackend(ctran::PeerGroup& group, const Settings& settings, int device,
             std::function<void()> drainHostWork)
      : group_(group), settings_(settings), device_(device), nranks_(group.nranks()) {
    resources_ = std::make_unique<gpu::DeviceResources>(group, device, settings);
    allReduce_ =
        std::make_unique<gpu::GpuAllReduce>(*resources_, settings, std::move(drainHostWork));
    collectives_ = std::make_unique<gpu::GpuCollectives>(*resources_, settings.gpuChannelBytes);
    // The low-precision staging is allocated now when a knob enables it; otherwise the first
    // call that asks for it allocates it (collectively).
    if (settings.lp.anyEnabled()) lowPrecision(nullptr, "communicator creation");
  }

  Selection select(size_t bytes, DataType type, RedOp op,
                   const SelectorConfig& cfg) const override {
    SelectorInput in;
    in.bytes = bytes;
    in.type = type;
    in.op = op;
    in.nranks = nranks_;
    in.nHosts = 1;
    in.directAccess = true;
    in.gpu = true;
    return selectAllReduce(in, cfg);
  }

  void allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                 const CallOptions& opts, void* stream) override {
    order_.enter(stream);
    const size_t bytes = count * dataTypeSize(type);
    if (auto plan = lp::planLowPrecision(
            settings_.lp, request(lp::LpCollective::kAllReduce, bytes, type, op, opts),
            "all_reduce on GPU")) {
      lowPrecision(stream, "all_reduce")
          .allReduce(plan->blockElems, send, recv, count, type, op == RedOp::kAvg, stream);
      return;
    }
    SelectorConfig hinted;
    const SelectorConfig* cfg = &settings_.selector;
    if (!opts.algo.empty()) cfg = &(hinted = withCallHint(settings_.selector, opts.algo));
    const Selection sel = select(bytes, type, op, *cfg);
    CTRAN_INFO("all_reduce on GPU ", device_, ": ", bytes, " bytes ", dataTypeName(type), " ",
               redOpName(op), " on ", nranks_, " ranks -> ", algoName(sel.algo), " (", sel.reason(),
               ")");
    allReduce_->run(sel.algo, send, recv, count, type, op, opts.premulScalar, stream);
  }

  void reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
              double premulScalar, int root, void* stream) override {
    order_.enter(stream);
    collectives_->reduce(send, recv, count, type, op, premulScalar, root, stream);
  }

  void allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                  const std::vector<size_t>& displs, DataType type, const CallOptions& opts,
                  void* stream) override {
    order_.enter(stream);
    size_t total = 0;
    for (size_t c : counts) total += c;
    if (auto plan =
            lp::planLowPrecision(settings_.lp,
                                 request(lp::LpCollective::kAllGather, total * dataTypeSize(type),
                                         type, RedOp::kSum, opts),
                                 "all_gather on GPU")) {
      lowPrecision(stream, "all_gather")
          .allGatherV(plan->blockElems, send, recv, counts, displs, type, stream);
      return;
    }
    collectives_->run(
        allGatherVExchange(group_.rank(), nranks_, send, recv, counts, displs, dataTypeSize(type)),
        "all_gather", stream);
  }

  void reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, RedOp op,
                      const CallOptions& opts, void* stream) override {
    order_.enter(stream);
    size_t total = 0;
    for (size_t c : counts) total += c;
    if (auto plan = lp::planLowPrecision(
            settings_.lp,
            request(lp::LpCollective::kReduceScatter, total * dataTypeSize(type), type, op, opts),
            "reduce_scatter on GPU")) {
      lowPrecision(stream, "reduce_scatter")
          .reduceScatterV(plan->blockElems, send, recv, counts, displs, type, op == RedOp::kAvg,
                          stream);
      return;
    }
    collectives_->reduceScatterV(send, recv, counts, displs, type, op, opts.premulScalar, stream);
  }

  void allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                const CallOptions& opts, void* stream) override {
    order_.enter(stream);
    const size_t total = countPerRank * nranks_;
    if (auto plan =
            lp::planLowPrecision(settings_.lp,
                                 request(lp::LpCollective::kAllToAll, total * dataTypeSize(type),
                                         type, RedOp::kSum, opts),
                                 "all_to_all on GPU")) {
      const void* input = inputAside(send, recv, total * dataTypeSize(type), stream);
      lowPrecision(stream, "all_to_all")
          .allToAll(plan->blockElems, input, recv, countPerRank, type, stream);
      return;
    }
    std::vector<size_t> counts(nranks_, countPerRank), displs(nranks_);
    for (int p = 0; p < nranks_; ++p) displs[p] = p * countPerRank;
    allToAllV(send, recv, counts, displs, counts, displs, type, stream);
  }

  void allToAllV(const void* send, void* recv, const std::vector<size_t>& sendCounts,
                 const std::vector<size_t>& sendDispls, const std::vector<size_t>& recvCounts,
                 const std::vector<size_t>& recvDispls, DataType type, void* stream) override {
    order_.enter(stream);
    size_t extent = 0;
    for (int p = 0; p < nranks_; ++p)
      extent = std::max(extent, (sendDispls[p] + sendCounts[p]) * dataTypeSize(type));
    send = inputAside(send, recv, extent, stream);
    collectives_->run(allToAllVExchange(group_.rank(), nranks_, send, sendCounts, sendDispls, recv,
                                        recvCounts, recvDispls, dataTypeSize(type)),
                      "all_to_all", stream);
  }

  /// An all_to_all in place (send == recv) runs from a copy of its input's `bytes` (the blocks
  /// received would overwrite blocks not yet sent: the kernels' roles run at once); `send`
  /// otherwise.
  const void* inputAside(const void* send, void* recv, size_t bytes, void* stream) {
    if (send != recv || bytes == 0) return send;
    void* copy = resources_->scratch(bytes, stream, "all_to_all in place on GPU buffers");
    ctran::GpuDeviceGuard guard(resources_->device(), "all_to_all in place");
    CTRAN_GPU_CHECK(gpuMemcpyAsync(copy, send, bytes, gpuMemcpyDeviceToDevice,
                                   static_cast<gpuStream_t>(stream)),
                    "all_to_all in place: copying the input aside");
    return copy;
  }

  void allToAllvDynamic(const DynamicCall& call, void* stream) override {
    order_.enter(stream);
    if (!dynamic_) {
      dynamic_ = std::make_unique<gpu::GpuAllToAllvDynamic>(*resources_,
                                                            settings_.a2avDynamicSlotBytes, stream);
    }
    dynamic_->run(call, stream);
  }

  std::string takeDynamicErrors() override { return dynamic_ ? dynamic_->takeRecorded() : ""; }

  void exchange(const Exchange& x, OpKind, const char* what, void* stream) override {
    order_.enter(stream);
    collectives_->run(x, what, stream);
  }

  void sendRecv(const std::vector<DeviceTransfer>& ops, void* stream) override {
    order_.enter(stream);
    collectives_->sendRecv(ops, stream);
  }

  void* allocSymmetric(size_t bytes) override { return resources_->allocSymmetric(bytes); }
  void registerSymmetric(void* ptr, size_t bytes) override {
    resources_->registerSymmetric(ptr, bytes);
  }
  void freeSymmetric(void* ptr) override { resources_->freeSymmetric(ptr); }
  // One-sided calls share nothing with the collectives (their own signals, the caller's
  // buffers), so they do not enter the collectives' stream order.
  void openSignals() override { resources_->openSignals(); }
  void putSignal(int peer, const void* buffer, size_t offset, const void* src, size_t bytes,
                 void* stream) override {
    resources_->signals("device_put_signal")
        .putSignal(resources_->symmetricWindow(buffer, "device_put_signal"), peer, offset, src,
                   bytes, stream);
  }
  void signal(int peer, void* stream) override {
    resources_->signals("device_signal").signal(peer, stream);
  }
  void waitSignals(const std::vector<uint64_t>& counts, void* stream) override {
    resources_->signals("device_wait_signals").waitSignals(counts, stream, resources_->timeoutMs());
  }
  uint64_t symmetricCalls() const override { return allReduce_->zeroCopyCalls(); }
  size_t graphRegistrations() override {
    gpu::GraphRegistrations* g = resources_->graphOutputs();
    return g ? g->held() : 0;
  }
  void setTuning(const std::string& spec) override { resources_->setTuning(spec); }
  std::string gpuSharing() const override { return resources_->coResidency().describe(); }
  size_t allocatedBytes() const override { return resources_->allocatedBytes(); }

  void reportKernelTimeout() override { resources_->reportKernelTimeout(); }

  void destroy(bool collective) override {
    resources_->destroy(collective);
    dynamic_.reset();  // its status memory, once the windows' destroy waited for this GPU
  }

 private:
  lp::LpRequest request(lp::LpCollective c, size_t bytes, DataType type, RedOp op,
                        const CallOptions& opts) const {
    lp::LpRequest r;
    r.collective = c;
    r.bytes = bytes;
    r.type = type;
    r.op = op;
    r.nranks = nranks_;
    r.hint = opts.lowPrecision;
    r.onDevice = true;
    return r;
  }

  lp::GpuLowPrecision& lowPrecision(void* stream, const char* what) {
    if (lp_) return *lp_;
    CTRAN_CHECK(!lp::GpuLowPrecision::capturing(stream), ctran::InvalidUsage, what,
                ": the first low-precision call on GPU buffers allocates its device staging, "
                "which cannot happen during graph capture; enable low precision with a "
                "RCCL_LOW_PRECISION_* knob when creating the communicator (the staging is then "
                "allocated there), or make one such call before capturing");
    lp_ = std::make_unique<lp::GpuLowPrecision>(*resources_, settings_.lpGpuStagingBytes,
                                                settings_.lpGpuBlocks, settings_.lpGpuChunkBlocks);
    return *lp_;
  }

  ctran::PeerGroup& group_;
  const Settings& settings_;
  int device_;
  int nranks_;
  std::unique_ptr<gpu::DeviceResources> resources_;  ///< owns every window and buffer below
  std::unique_ptr<gpu::GpuAllReduce> allReduce_;
  std::unique_ptr<gpu::GpuCollectives> collectives_;
  std::unique_ptr<lp::GpuLowPrecision> lp_;
  std::unique_ptr<gpu::GpuAllToAllvDynamic> dynamic_;  ///< made by the first alltoallv_dynamic
  gpu::StreamOrder order_;  ///< every call enters it first, with its stream
};

}  // namespace

std::unique_ptr<DeviceBackend> DeviceBackend::create(ctran::PeerGroup& group,
                                                     const Settings& settings, int device,
                                                     HostBackend& host) {
  if (group.topology().nHosts > 1) return makeStagedBackend(host, group, device, settings);
  return std::make_unique<GpuBackend>(group, settings, device, [&host] { host.finalize(); });
}

}  // namespace rcclx
