// Implementation of lp_policy.hpp.
#include "lp/lp_policy.hpp"

#include "config.hpp"
#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "lp/lp_wire_format.hpp"

namespace rcclx::lp {
namespace {

constexpr const char* kNames[kNumLpCollectives] = {"all_reduce", "all_gather", "reduce_scatter",
                                                   "all_to_all"};
constexpr const char* kKnobs[kNumLpCollectives] = {
    "RCCL_LOW_PRECISION_ENABLE_ALLREDUCE", "RCCL_LOW_PRECISION_ENABLE_ALLGATHER",
    "RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER", "RCCL_LOW_PRECISION_ENABLE_ALLTOALL"};

/// Whether collective i's own switch is set (else it follows the global one).
bool ownSwitchSet(int i, const ctran::config::Overrides* hints) {
  return !ctran::config::getString(kKnobs[i], hints).empty();
}

bool reduces(LpCollective c) {
  return c == LpCollective::kAllReduce || c == LpCollective::kReduceScatter;
}

}  // namespace

const char* lpCollectiveName(LpCollective c) { return kNames[static_cast<int>(c)]; }

LpCollective parseLpCollective(const std::string& name, const char* what) {
  for (int i = 0; i < kNumLpCollectives; ++i) {
    if (name == kNames[i]) return static_cast<LpCollective>(i);
  }
  throw ctran::InvalidArgument(
      ctran::strCat(what, ": '", name,
                    "' has no low-precision variant (all_reduce, all_gather, "
                    "reduce_scatter or all_to_all)"));
}

bool LpConfig::anyEnabled() const {
  for (bool e : enabled) {
    if (e) return true;
  }
  return false;
}

LpConfig lpConfigFrom(const ctran::config::Overrides* hints) {
  declareKnobs();
  LpConfig cfg;
  for (int i = 0; i < kNumLpCollectives; ++i) {
    // Unset (or empty): follows the global switch; set: overrides it either way.
    const bool own = ownSwitchSet(i, hints);
    cfg.enabled[i] =
        own ? ctran::config::getBool(kKnobs[i], hints) : knob::RCCL_LOW_PRECISION_ENABLE(hints);
    cfg.enabledBy[i] =
        ctran::strCat(own ? kKnobs[i] : "RCCL_LOW_PRECISION_ENABLE", "=", cfg.enabled[i] ? 1 : 0);
  }
  cfg.minBytes = static_cast<size_t>(knob::RCCLX_LP_MIN_BYTES(hints));
  const int64_t block = knob::RCCLX_LP_BLOCK_ELEMS(hints);
  CTRAN_CHECK(block >= static_cast<int64_t>(kMinBlockElems) &&
                  block <= static_cast<int64_t>(kMaxBlockElems) && block % kMinBlockElems == 0,
              ctran::InvalidArgument, "RCCLX_LP_BLOCK_ELEMS=", block,
              " must be a multiple of 32 from ", kMinBlockElems, " to ", kMaxBlockElems);
  cfg.blockElems = static_cast<size_t>(block);
  return cfg;
}

LpDecision decideLowPrecision(const LpRequest& req, const LpConfig& cfg) {
  const int c = static_cast<int>(req.collective);
  if (req.hint.has_value() && !*req.hint) return {false, false, "low_precision=False"};
  const bool forced = req.hint.value_or(false);
  if (!forced && !cfg.enabled[c]) return {false, false, "not enabled (" + cfg.enabledBy[c] + ")"};
  const std::string by = forced ? std::string("low_precision=True") : cfg.enabledBy[c];
  auto fallback = [&](const std::string& why) {
    return LpDecision{false, true, ctran::strCat(why, " (requested by ", by, ")")};
  };
  if (req.type != DataType::kFloat32 && req.type != DataType::kBfloat16) {
    return fallback(ctran::strCat("datatype ", dataTypeName(req.type),
                                  " is not eligible: float32 and bfloat16 only"));
  }
  if (reduces(req.collective) && req.op != RedOp::kSum && req.op != RedOp::kAvg) {
    return fallback(ctran::strCat("op ", redOpName(req.op), " is not eligible: sum and avg only"));
  }
  if (req.nranks < 2) return fallback("a single rank sends nothing");
  if (!forced && req.bytes < cfg.minBytes) {
    return fallback(ctran::strCat(req.bytes, " bytes < RCCLX_LP_MIN_BYTES=", cfg.minBytes));
  }
  return {true, true,
          forced
              ? by
              : ctran::strCat(by, ", ", req.bytes, " bytes >= RCCLX_LP_MIN_BYTES=", cfg.minBytes)};
}

}  // namespace rcclx::lp

namespace rcclx::lp {

std::optional<LpPlan> planLowPrecision(const LpConfig& cfg, const LpRequest& req, const char* what,
                                       uint64_t seq) {
  const bool asked =
      req.hint.has_value() ? *req.hint : cfg.enabled[static_cast<int>(req.collective)];
  if (!asked) return std::nullopt;
  const LpDecision d = decideLowPrecision(req, cfg);
  if (!d.use) {
    if (d.requested)
      CTRAN_INFO(what, seq ? ctran::strCat(" #", seq) : "", ": full precision: ", d.reason);
    return std::nullopt;
  }
  CTRAN_INFO(what, seq ? ctran::strCat(" #", seq) : "", ": low precision",
             req.onDevice ? " on GPU" : "", " (fp8 e4m3, ", cfg.blockElems,
             "-element blocks): ", d.reason);
  return LpPlan{cfg.blockElems};
}

}  // namespace rcclx::lp
