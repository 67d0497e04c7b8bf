// rcclx_core/src/lp/lp_policy.hpp: when a collective runs in low precision (the hint, the
// switches, eligible types and ops, the rank count, RCCLX_LP_MIN_BYTES, and the reason given for
// each fallback), planLowPrecision, the collective names, and lpConfigFrom's reading of the knobs.
#include <string>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "lp/lp_policy.hpp"

using rcclx::DataType;
using rcclx::RedOp;
using rcclx::lp::decideLowPrecision;
using rcclx::lp::LpCollective;
using rcclx::lp::LpConfig;
using rcclx::lp::LpDecision;
using rcclx::lp::LpRequest;

namespace {

constexpr size_t kMin = size_t{16} << 20;

// Low precision switched on for every collective by the global knob.
LpConfig switchedOn() {
  LpConfig cfg;
  for (int i = 0; i < rcclx::lp::kNumLpCollectives; ++i) {
    cfg.enabled[i] = true;
    cfg.enabledBy[i] = "RCCL_LOW_PRECISION_ENABLE=1";
  }
  return cfg;
}

LpConfig switchedOff() {
  LpConfig cfg;
  for (auto& by : cfg.enabledBy) by = "RCCL_LOW_PRECISION_ENABLE=0";
  return cfg;
}

LpRequest request(LpCollective c, size_t bytes) {
  LpRequest req;
  req.collective = c;
  req.bytes = bytes;
  req.nranks = 4;
  return req;
}

void checkDecision(const LpDecision& d, bool use, bool requested, const std::string& reason,
                   const char* file, int line) {
  if (d.use != use || d.requested != requested || d.reason != reason) {
    check::fail(file, line,
                "decision {use=" + check::show(d.use) + ", requested=" + check::show(d.requested) +
                    ", reason=" + check::show(d.reason) + "}, expected {use=" + check::show(use) +
                    ", requested=" + check::show(requested) + ", reason=" + check::show(reason) +
                    "}");
  }
}

#define CHECK_DECISION(d, use, requested, reason) \
  checkDecision((d), (use), (requested), (reason), __FILE__, __LINE__)

}  // namespace

TEST_CASE("switched on: eligible calls from RCCLX_LP_MIN_BYTES on") {
  const LpConfig cfg = switchedOn();
  CHECK_EQ(cfg.minBytes, kMin);
  CHECK_DECISION(decideLowPrecision(request(LpCollective::kAllReduce, kMin), cfg), true, true,
                 "RCCL_LOW_PRECISION_ENABLE=1, 16777216 bytes >= RCCLX_LP_MIN_BYTES=16777216");
  CHECK_DECISION(decideLowPrecision(request(LpCollective::kAllReduce, kMin - 1), cfg), false, true,
                 "16777215 bytes < RCCLX_LP_MIN_BYTES=16777216 (requested by "
                 "RCCL_LOW_PRECISION_ENABLE=1)");
  LpConfig small = cfg;
  small.minBytes = 0;
  CHECK(decideLowPrecision(request(LpCollective::kAllGather, 0), small).use);
}

TEST_CASE("switched off: nothing runs in low precision, and nothing is logged as a fallback") {
  const LpConfig cfg = switchedOff();
  CHECK(!cfg.anyEnabled());
  for (auto c : {LpCollective::kAllReduce, LpCollective::kAllGather, LpCollective::kReduceScatter,
                 LpCollective::kAllToAll}) {
    CHECK_DECISION(decideLowPrecision(request(c, size_t{1} << 30), cfg), false, false,
                   "not enabled (RCCL_LOW_PRECISION_ENABLE=0)");
  }
}

TEST_CASE("per collective: only the switched-on collective runs in low precision") {
  LpConfig cfg = switchedOff();
  const int gather = static_cast<int>(LpCollective::kAllGather);
  cfg.enabled[gather] = true;
  cfg.enabledBy[gather] = "RCCL_LOW_PRECISION_ENABLE_ALLGATHER=1";
  CHECK(cfg.anyEnabled());
  CHECK_DECISION(decideLowPrecision(request(LpCollective::kAllGather, kMin), cfg), true, true,
                 "RCCL_LOW_PRECISION_ENABLE_ALLGATHER=1, 16777216 bytes >= "
                 "RCCLX_LP_MIN_BYTES=16777216");
  CHECK_DECISION(decideLowPrecision(request(LpCollective::kAllReduce, kMin), cfg), false, false,
                 "not enabled (RCCL_LOW_PRECISION_ENABLE=0)");
}

TEST_CASE("hint: True forces it below the minimum, False refuses it when switched on") {
  LpRequest req = request(LpCollective::kReduceScatter, 4);
  req.hint = true;
  CHECK_DECISION(decideLowPrecision(req, switchedOff()), true, true, "low_precision=True");
  LpRequest refused = request(LpCollective::kAllToAll, kMin);
  refused.hint = false;
  CHECK_DECISION(decideLowPrecision(refused, switchedOn()), false, false, "low_precision=False");
}

TEST_CASE("types: float32 and bfloat16 only, even when forced") {
  LpRequest req = request(LpCollective::kAllReduce, kMin);
  req.type = DataType::kBfloat16;
  CHECK(decideLowPrecision(req, switchedOn()).use);
  for (auto type :
       {DataType::kFloat16, DataType::kFloat64, DataType::kInt32, DataType::kFloat8E4M3}) {
    req.type = type;
    const LpDecision d = decideLowPrecision(req, switchedOn());
    CHECK(!d.use);
    CHECK(d.requested);
  }
  req.type = DataType::kFloat16;
  req.hint = true;
  CHECK_DECISION(decideLowPrecision(req, switchedOff()), false, true,
                 "datatype float16 is not eligible: float32 and bfloat16 only (requested by "
                 "low_precision=True)");
}

TEST_CASE("ops: sum and avg for the reductions; ignored by all_gather and all_to_all") {
  LpRequest req = request(LpCollective::kAllReduce, kMin);
  req.op = RedOp::kAvg;
  CHECK(decideLowPrecision(req, switchedOn()).use);
  req.op = RedOp::kMax;
  CHECK_DECISION(decideLowPrecision(req, switchedOn()), false, true,
                 "op max is not eligible: sum and avg only (requested by "
                 "RCCL_LOW_PRECISION_ENABLE=1)");
  req.collective = LpCollective::kReduceScatter;
  req.op = RedOp::kProd;
  CHECK_DECISION(decideLowPrecision(req, switchedOn()), false, true,
                 "op prod is not eligible: sum and avg only (requested by "
                 "RCCL_LOW_PRECISION_ENABLE=1)");
  for (auto c : {LpCollective::kAllGather, LpCollective::kAllToAll}) {
    req.collective = c;
    req.op = RedOp::kMax;
    CHECK(decideLowPrecision(req, switchedOn()).use);
  }
}

TEST_CASE("one rank: nothing to send, even when forced") {
  LpRequest req = request(LpCollective::kAllReduce, kMin);
  req.nranks = 1;
  req.hint = true;
  CHECK_DECISION(decideLowPrecision(req, switchedOn()), false, true,
                 "a single rank sends nothing (requested by low_precision=True)");
}

TEST_CASE("the checks run in order: type, op, ranks, then size") {
  LpRequest req = request(LpCollective::kAllReduce, 1);
  req.type = DataType::kInt8;
  req.op = RedOp::kMin;
  req.nranks = 1;
  CHECK(decideLowPrecision(req, switchedOn()).reason.find("datatype int8") == 0);
  req.type = DataType::kFloat32;
  CHECK(decideLowPrecision(req, switchedOn()).reason.find("op min") == 0);
  req.op = RedOp::kSum;
  CHECK(decideLowPrecision(req, switchedOn()).reason.find("a single rank") == 0);
  req.nranks = 2;
  CHECK(decideLowPrecision(req, switchedOn()).reason.find("1 bytes < RCCLX_LP_MIN_BYTES") == 0);
}

TEST_CASE("GPU buffers take the same decision") {
  LpRequest req = request(LpCollective::kAllReduce, kMin);
  req.onDevice = true;
  CHECK(decideLowPrecision(req, switchedOn()).use);
  req.bytes = kMin - 1;
  CHECK(!decideLowPrecision(req, switchedOn()).use);
}

TEST_CASE("collective names round-trip; others are refused") {
  for (auto c : {LpCollective::kAllReduce, LpCollective::kAllGather, LpCollective::kReduceScatter,
                 LpCollective::kAllToAll}) {
    CHECK(rcclx::lp::parseLpCollective(rcclx::lp::lpCollectiveName(c), "test") == c);
  }
  CHECK_EQ(rcclx::lp::lpCollectiveName(LpCollective::kReduceScatter), "reduce_scatter");
  CHECK_THROWS_AS(rcclx::lp::parseLpCollective("broadcast", "low_precision"),
                  ctran::InvalidArgument,
                  "low_precision: 'broadcast' has no low-precision variant (all_reduce, "
                  "all_gather, reduce_scatter or all_to_all)");
}

TEST_CASE("planLowPrecision: the block size when used, nothing otherwise") {
  LpConfig cfg = switchedOn();
  cfg.blockElems = 512;
  const auto plan = rcclx::lp::planLowPrecision(cfg, request(LpCollective::kAllReduce, kMin), "t");
  CHECK(plan.has_value());
  CHECK_EQ(plan.has_value() ? plan->blockElems : 0, 512);
  // Fallen back, not asked for, refused by the hint.
  CHECK(!rcclx::lp::planLowPrecision(cfg, request(LpCollective::kAllReduce, 1), "t"));
  CHECK(!rcclx::lp::planLowPrecision(switchedOff(), request(LpCollective::kAllReduce, kMin), "t"));
  LpRequest refused = request(LpCollective::kAllReduce, kMin);
  refused.hint = false;
  CHECK(!rcclx::lp::planLowPrecision(cfg, refused, "t"));
  LpRequest forcedSmall = request(LpCollective::kAllGather, 4);
  forcedSmall.hint = true;
  CHECK(rcclx::lp::planLowPrecision(switchedOff(), forcedSmall, "t").has_value());
}

TEST_CASE("lpConfigFrom: the global switch, a per-collective override, the sizes") {
  check::ScopedEnv global("RCCL_LOW_PRECISION_ENABLE", "1");
  check::ScopedEnv allReduce("RCCL_LOW_PRECISION_ENABLE_ALLREDUCE", nullptr);
  check::ScopedEnv allGather("RCCL_LOW_PRECISION_ENABLE_ALLGATHER", "0");
  check::ScopedEnv reduceScatter("RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER", nullptr);
  check::ScopedEnv allToAll("RCCL_LOW_PRECISION_ENABLE_ALLTOALL", nullptr);
  check::ScopedEnv minBytes("RCCLX_LP_MIN_BYTES", "1M");
  check::ScopedEnv block("RCCLX_LP_BLOCK_ELEMS", "128");
  LpConfig cfg = rcclx::lp::lpConfigFrom(nullptr);
  CHECK(cfg.enabled[0] && !cfg.enabled[1] && cfg.enabled[2] && cfg.enabled[3]);
  CHECK_EQ(cfg.enabledBy[0], "RCCL_LOW_PRECISION_ENABLE=1");
  CHECK_EQ(cfg.enabledBy[1], "RCCL_LOW_PRECISION_ENABLE_ALLGATHER=0");
  CHECK_EQ(cfg.minBytes, 1 << 20);
  CHECK_EQ(cfg.blockElems, 128);
  // Hints win over the environment, knob by knob.
  const ctran::config::Overrides hints = {{"RCCL_LOW_PRECISION_ENABLE_ALLTOALL", "0"},
                                          {"RCCLX_LP_BLOCK_ELEMS", "64"}};
  cfg = rcclx::lp::lpConfigFrom(&hints);
  CHECK(cfg.enabled[0] && !cfg.enabled[1] && cfg.enabled[2] && !cfg.enabled[3]);
  CHECK_EQ(cfg.enabledBy[3], "RCCL_LOW_PRECISION_ENABLE_ALLTOALL=0");
  CHECK_EQ(cfg.minBytes, 1 << 20);
  CHECK_EQ(cfg.blockElems, 64);
}

TEST_CASE("lpConfigFrom: the defaults") {
  check::ScopedEnv global("RCCL_LOW_PRECISION_ENABLE", nullptr);
  check::ScopedEnv allReduce("RCCL_LOW_PRECISION_ENABLE_ALLREDUCE", nullptr);
  check::ScopedEnv allGather("RCCL_LOW_PRECISION_ENABLE_ALLGATHER", nullptr);
  check::ScopedEnv reduceScatter("RCCL_LOW_PRECISION_ENABLE_REDUCESCATTER", nullptr);
  check::ScopedEnv allToAll("RCCL_LOW_PRECISION_ENABLE_ALLTOALL", nullptr);
  check::ScopedEnv minBytes("RCCLX_LP_MIN_BYTES", nullptr);
  check::ScopedEnv block("RCCLX_LP_BLOCK_ELEMS", nullptr);
  const LpConfig cfg = rcclx::lp::lpConfigFrom(nullptr);
  CHECK(!cfg.anyEnabled());
  CHECK_EQ(cfg.enabledBy[2], "RCCL_LOW_PRECISION_ENABLE=0");
  CHECK_EQ(cfg.minBytes, kMin);
  CHECK_EQ(cfg.blockElems, 256);
}

TEST_CASE("lpConfigFrom: RCCLX_LP_BLOCK_ELEMS must be a multiple of 32 in [32, 4096]") {
  for (const char* bad : {"0", "16", "48", "4128"}) {
    const ctran::config::Overrides hints = {{"RCCLX_LP_BLOCK_ELEMS", bad}};
    CHECK_THROWS_AS(
        rcclx::lp::lpConfigFrom(&hints), ctran::InvalidArgument,
        "RCCLX_LP_BLOCK_ELEMS=" + std::string(bad) + " must be a multiple of 32 from 32 to 4096");
  }
  for (const char* good : {"32", "4096"}) {
    const ctran::config::Overrides hints = {{"RCCLX_LP_BLOCK_ELEMS", good}};
    CHECK_EQ(rcclx::lp::lpConfigFrom(&hints).blockElems, std::stoul(good));
  }
}
