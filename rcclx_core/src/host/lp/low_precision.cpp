// Implementation of low_precision.hpp.
#include "host/lp/low_precision.hpp"

#include "ctran/checks.hpp"
#include "host/lp/lp_collectives.hpp"
#include "host/p2p/channels.hpp"
#include "lp/fp8_block_quantizer.hpp"
#include "lp/lp_wire_format.hpp"

namespace rcclx::lp {

HostLowPrecision::HostLowPrecision(Channels& channels, bool eager) : channels_(channels) {
  if (eager) workspace();
}

HostLowPrecision::~HostLowPrecision() = default;

LpWorkspace& HostLowPrecision::workspace() {
  if (!workspace_) workspace_ = std::make_unique<LpWorkspace>(channels_.slotBytes());
  return *workspace_;
}

void HostLowPrecision::checkFits(size_t blockElems, const char* what) const {
  CTRAN_CHECK(wireMaxElems(channels_.slotBytes(), blockElems) > 0, ctran::InvalidArgument, what,
              ": RCCLX_LP_BLOCK_ELEMS=", blockElems, " needs channel slots of at least ",
              wireBytes(blockElems, blockElems), " bytes, but RCCLX_P2P_CHUNK_BYTES gives ",
              channels_.slotBytes());
}

void HostLowPrecision::allReduce(const LpPlan& plan, const void* send, void* recv, size_t count,
                                 DataType type, RedOp op, uint64_t tag) {
  lpAllReduce(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, count, type,
              op == RedOp::kAvg, tag);
}

void HostLowPrecision::reduceScatterV(const LpPlan& plan, const void* send, void* recv,
                                      const std::vector<size_t>& counts,
                                      const std::vector<size_t>& displs, DataType type, RedOp op,
                                      uint64_t tag) {
  lpReduceScatterV(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, counts,
                   displs, type, op == RedOp::kAvg, tag);
}

void HostLowPrecision::allGatherV(const LpPlan& plan, const void* send, void* recv,
                                  const std::vector<size_t>& counts,
                                  const std::vector<size_t>& displs, DataType type, uint64_t tag) {
  lpAllGatherV(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, counts,
               displs, type, tag);
}

void HostLowPrecision::allToAll(const LpPlan& plan, const void* send, void* recv,
                                size_t countPerRank, DataType type, uint64_t tag) {
  lpAllToAll(channels_, Fp8BlockQuantizer(plan.blockElems), workspace(), send, recv, countPerRank,
             type, tag);
}

}  // namespace rcclx::lp
