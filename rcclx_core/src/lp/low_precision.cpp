// Implementation of low_precision.hpp.
#include "low_precision.hpp"

#include "../p2p/channels.hpp"
#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "fp8_block_quantizer.hpp"
#include "lp_collectives.hpp"
#include "lp_wire_format.hpp"

namespace rcclx::lp {

LowPrecision::LowPrecision(Channels& channels, int nranks) : channels_(channels), nranks_(nranks) {
  if (lpConfigFromEnv().anyEnabled()) workspace();
}

LowPrecision::~LowPrecision() = default;

LpWorkspace& LowPrecision::workspace() {
  if (!workspace_) workspace_ = std::make_unique<LpWorkspace>(channels_.slotBytes());
  return *workspace_;
}

std::optional<LpPlan> LowPrecision::plan(LpCollective collective, const std::string& what,
                                         size_t bytes, DataType type, RedOp op,
                                         std::optional<bool> hint, bool onDevice) const {
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

}  // namespace rcclx::lp
