// When a collective runs in low precision: a pure function of the call and the configuration
// (the knobs, read once per communicator by lpConfigFrom), unit-testable without processes, like
// the selector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "ctran/config.hpp"
#include "rcclx/types.hpp"

namespace rcclx::lp {

/// The collectives that have a low-precision variant.
enum class LpCollective : int { kAllReduce = 0, kAllGather, kReduceScatter, kAllToAll };
constexpr int kNumLpCollectives = 4;

/// "all_reduce", "all_gather", "reduce_scatter", "all_to_all".
const char* lpCollectiveName(LpCollective c);
/// Parses one of those names; throws InvalidArgument naming `what` otherwise.
LpCollective parseLpCollective(const std::string& name, const char* what);

/// The knobs' view of low precision.
struct LpConfig {
  bool enabled[kNumLpCollectives] = {false, false, false, false};
  std::string enabledBy[kNumLpCollectives];  ///< the knob that decided, "RCCL_...=1"
  size_t minBytes = size_t{16} << 20;        ///< RCCLX_LP_MIN_BYTES
  size_t blockElems = 256;                   ///< RCCLX_LP_BLOCK_ELEMS

  bool anyEnabled() const;
};

/// Reads RCCL_LOW_PRECISION_ENABLE, the per-collective RCCL_LOW_PRECISION_ENABLE_<COLL>
/// (which override it when set), RCCLX_LP_MIN_BYTES and RCCLX_LP_BLOCK_ELEMS (checked), each
/// from `hints` when it holds it, else the environment. Called once per communicator.
LpConfig lpConfigFrom(const ctran::config::Overrides* hints);

/// What the policy knows about one call.
struct LpRequest {
  LpCollective collective = LpCollective::kAllReduce;
  size_t bytes = 0;  ///< the call's largest buffer, all ranks' blocks together
  DataType type = DataType::kFloat32;
  RedOp op = RedOp::kSum;  ///< ignored for all_gather and all_to_all
  int nranks = 2;
  std::optional<bool> hint;  ///< the per-call low_precision= (nullopt: the knobs decide)
  bool onDevice = false;     ///< GPU buffers
};

struct LpDecision {
  bool use = false;
  bool requested = false;  ///< the knobs or the hint asked for it (a fallback is then logged)
  std::string reason;
};

/// Low precision runs when the hint or the knobs ask for it and the call is eligible: float32
/// or bfloat16, SUM or AVG for the reductions, more than one rank (host or GPU buffers), and
/// (unless the hint forces it) at least RCCLX_LP_MIN_BYTES.
LpDecision decideLowPrecision(const LpRequest& req, const LpConfig& cfg);

}  // namespace rcclx::lp

namespace rcclx::lp {

/// What a back-end runs for one call that goes low precision: the quantizer's block size.
struct LpPlan {
  size_t blockElems = 0;
};

/// The decision for one call of `what` ("all_reduce"; `seq` its number, 0 for none), logged at INFO
/// when low precision was asked for (used, or fallen back with the reason); nullopt: full
/// precision. Cheap when not asked for (no hint, knob off): no formatting, no allocation.
std::optional<LpPlan> planLowPrecision(const LpConfig& cfg, const LpRequest& req, const char* what,
                                       uint64_t seq = 0);

}  // namespace rcclx::lp
