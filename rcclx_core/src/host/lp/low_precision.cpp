// Implementation of low_precision.hpp.
#include "host/lp/low_precision.hpp"

#include <algorithm>

#include "host/p2p/channels.hpp"
#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "lp/fp8_block_quantizer.hpp"
#include "device/lp/gpu_low_precision.hpp"
#include "host/lp/lp_collectives.hpp"
#include "lp/lp_wire_format.hpp"
#include "config.hpp"

namespace rcclx::lp {

LowPrecision::LowPrecision(Channels& channels, int nranks) : channels_(channels), nranks_(nranks) {
  if (lpConfigFromEnv().anyEnabled()) workspace();
}

LowPrecision::~LowPrecision() = default;

void LowPrecision::attachGpu(ctran::PeerGroup& group, int device) {
  group_ = &group;
  device_ = device;
  if (lpConfigFromEnv().anyEnabled()) gpu(nullptr, "communicator creation");
}

void LowPrecision::destroyGpu(bool collective) {
  if (gpu_) gpu_->destroy(collective);
  gpu_.reset();
}

GpuLowPrecision& LowPrecision::gpu(void* stream, const char* what) {
  if (gpu_) return *gpu_;
  CTRAN_CHECK(group_ != nullptr && device_ >= 0, ctran::InvalidUsage, what,
              ": low precision on GPU buffers needs a communicator created with a device");
  CTRAN_CHECK(!GpuLowPrecision::capturing(stream), ctran::InvalidUsage, what,
              ": the first low-precision call on GPU buffers allocates its device staging, which "
              "cannot happen during graph capture; enable low precision with a "
              "RCCL_LOW_PRECISION_* knob when creating the communicator (the staging is then "
              "allocated there), or make one such call before capturing");
  gpu_ = std::make_unique<GpuLowPrecision>(
      *group_, device_, static_cast<size_t>(knob::RCCLX_LP_GPU_STAGING_BYTES()),
      static_cast<int>(knob::RCCLX_LP_GPU_BLOCKS()),
      static_cast<size_t>(std::max<int64_t>(1, knob::RCCLX_LP_GPU_CHUNK_BLOCKS())));
  return *gpu_;
}

LpWorkspace& LowPrecision::workspace() {
  if (!workspace_) workspace_ = std::make_unique<LpWorkspace>(channels_.slotBytes());
  return *workspace_;
}

std::optional<LpPlan> LowPrecision::plan(LpCollective collective, const std::string& what,
                                         size_t bytes, DataType type, RedOp op,
                                         std::optional<bool> hint, bool onDevice) const {
  // Not asked for (the common case): nothing to decide or log; two knob reads, no formatting.
  if (hint.has_value() ? !*hint : !lpSwitchedOn(collective)) return std::nullopt;
  const LpConfig cfg = lpConfigFromEnv();
  LpRequest req;
  req.collective = collective;
  req.bytes = bytes;
  req.type = type;
  req.op = op;
  req.nranks = nranks_;
  req.hint = hint;
  req.onDevice = onDevice;
  const LpDecision d = decideLowPrecision(req, cfg);
  if (!d.use) {
    if (d.requested) CTRAN_INFO(what, ": full precision: ", d.reason);
    return std::nullopt;
  }
  if (onDevice) {
    CTRAN_INFO(what, ": low precision on GPU (fp8 e4m3, ", cfg.blockElems,
               "-element blocks): ", d.reason);
    return LpPlan{cfg.blockElems};
  }
  const size_t chunk = wireMaxElems(channels_.slotBytes(), cfg.blockElems);
  CTRAN_CHECK(chunk > 0, ctran::InvalidArgument, what, ": RCCLX_LP_BLOCK_ELEMS=", cfg.blockElems,
              " needs channel slots of at least ", wireBytes(cfg.blockElems, cfg.blockElems),
              " bytes, but RCCLX_P2P_CHUNK_BYTES gives ", channels_.slotBytes());
  CTRAN_INFO(what, ": low precision (fp8 e4m3, ", cfg.blockElems, "-element blocks, ", chunk,
             "-element chunks): ", d.reason);
  return LpPlan{cfg.blockElems};
}

void LowPrecision::allReduce(const LpPlan& plan, const void* send, void* recv, size_t count,
                             DataType type, RedOp op, uint64_t tag) {
  lpAllReduce(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, count, type,
              op == RedOp::kAvg, tag);
}

void LowPrecision::reduceScatterV(const LpPlan& plan, const void* send, void* recv,
                                  const std::vector<size_t>& counts,
                                  const std::vector<size_t>& displs, DataType type, RedOp op,
                                  uint64_t tag) {
  lpReduceScatterV(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, counts,
                   displs, type, op == RedOp::kAvg, tag);
}

void LowPrecision::allGatherV(const LpPlan& plan, const void* send, void* recv,
                              const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                              DataType type, uint64_t tag) {
  lpAllGatherV(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, counts,
               displs, type, tag);
}

void LowPrecision::allToAll(const LpPlan& plan, const void* send, void* recv, size_t countPerRank,
                            DataType type, uint64_t tag) {
  lpAllToAll(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, countPerRank,
             type, tag);
}

void LowPrecision::allReduceOnDevice(const LpPlan& plan, const void* send, void* recv, size_t count,
                                     DataType type, RedOp op, void* stream) {
  gpu(stream, "all_reduce")
      .allReduce(plan.blockElems, send, recv, count, type, op == RedOp::kAvg, stream);
}

void LowPrecision::reduceScatterVOnDevice(const LpPlan& plan, const void* send, void* recv,
                                          const std::vector<size_t>& counts,
                                          const std::vector<size_t>& displs, DataType type,
                                          RedOp op, void* stream) {
  gpu(stream, "reduce_scatter")
      .reduceScatterV(plan.blockElems, send, recv, counts, displs, type, op == RedOp::kAvg, stream);
}

void LowPrecision::allGatherVOnDevice(const LpPlan& plan, const void* send, void* recv,
                                      const std::vector<size_t>& counts,
                                      const std::vector<size_t>& displs, DataType type,
                                      void* stream) {
  gpu(stream, "all_gather").allGatherV(plan.blockElems, send, recv, counts, displs, type, stream);
}

void LowPrecision::allToAllOnDevice(const LpPlan& plan, const void* send, void* recv,
                                    size_t countPerRank, DataType type, void* stream) {
  gpu(stream, "all_to_all").allToAll(plan.blockElems, send, recv, countPerRank, type, stream);
}

}  // namespace rcclx::lp
