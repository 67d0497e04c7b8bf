// Implementation of selector.hpp.
#include "selector.hpp"

#include <cstdlib>

#include "config.hpp"
#include "ctran/checks.hpp"

namespace rcclx {

const char* algoName(AllReduceAlgo algo) {
  switch (algo) {
    case AllReduceAlgo::kAuto: return "auto";
    case AllReduceAlgo::kRing: return "ring";
    case AllReduceAlgo::kDdaFlat: return "dda_flat";
    case AllReduceAlgo::kDdaTree: return "dda_tree";
    case AllReduceAlgo::kDdaLarge: return "dda_large";
    case AllReduceAlgo::kFlat: return "flat";
    case AllReduceAlgo::kHierarchical: return "hierarchical";
  }
  return "?";
}

const char* collectiveAlgoName(CollectiveAlgo algo) {
  switch (algo) {
    case CollectiveAlgo::kAuto: return "auto";
    case CollectiveAlgo::kFlat: return "flat";
    case CollectiveAlgo::kRing: return "ring";
    case CollectiveAlgo::kHierarchical: return "hierarchical";
  }
  return "?";
}

CollectiveAlgo parseCollectiveAlgo(const std::string& name, const std::string& what) {
  for (auto a : {CollectiveAlgo::kAuto, CollectiveAlgo::kFlat, CollectiveAlgo::kRing,
                 CollectiveAlgo::kHierarchical}) {
    if (name == collectiveAlgoName(a)) return a;
  }
  throw ctran::InvalidArgument(ctran::strCat(what, ": unknown algorithm '", name,
                                             "' (choose auto, flat, ring or hierarchical)"));
}

const char* costCollectiveName(CostCollective c) {
  switch (c) {
    case CostCollective::kAllReduce: return "all_reduce";
    case CostCollective::kAllGather: return "all_gather";
    case CostCollective::kReduceScatter: return "reduce_scatter";
    case CostCollective::kBroadcast: return "broadcast";
    case CostCollective::kReduce: return "reduce";
  }
  return "?";
}

const ForcedAlgo& SelectorConfig::forcedFor(CostCollective c) const {
  switch (c) {
    case CostCollective::kAllGather: return allGather;
    case CostCollective::kReduceScatter: return reduceScatter;
    case CostCollective::kBroadcast: return broadcast;
    default: return reduce;
  }
}

AllReduceAlgo parseAlgo(const std::string& name, const std::string& what) {
  for (auto a : {AllReduceAlgo::kAuto, AllReduceAlgo::kRing, AllReduceAlgo::kDdaFlat,
                 AllReduceAlgo::kDdaTree, AllReduceAlgo::kDdaLarge, AllReduceAlgo::kFlat,
                 AllReduceAlgo::kHierarchical}) {
    if (name == algoName(a)) return a;
  }
  throw ctran::InvalidArgument(
      ctran::strCat(what, ": unknown allreduce algorithm '", name,
                    "' (choose auto, ring, dda_flat, dda_tree or dda_large), or on host buffers "
                    "flat or hierarchical"));
}

namespace {

// A cost-model figure: a positive decimal (the knobs are strings, as the registry has no
// floating type).
double positiveFigure(const char* knobName, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  CTRAN_CHECK(!text.empty() && end != nullptr && *end == '\0' && v > 0 && v < 1e12,
              ctran::InvalidArgument, knobName, "='", text, "' is not a positive number");
  return v;
}

ForcedAlgo forcedAlgoFrom(const char* knobName, const std::string& value) {
  return {parseCollectiveAlgo(value, knobName), ctran::strCat(knobName, "=", value)};
}

}  // namespace

CostParams costParamsFrom(const ctran::config::Overrides* hints) {
  CostParams p;
  p.shm.latencyUs = positiveFigure("RCCLX_SHM_LATENCY_US", knob::RCCLX_SHM_LATENCY_US(hints));
  p.shm.gbps = positiveFigure("RCCLX_SHM_GBPS", knob::RCCLX_SHM_GBPS(hints));
  p.net.latencyUs = positiveFigure("RCCLX_NET_LATENCY_US", knob::RCCLX_NET_LATENCY_US(hints));
  p.net.gbps = positiveFigure("RCCLX_NET_GBPS", knob::RCCLX_NET_GBPS(hints));
  p.stepOverheadUs = positiveFigure("RCCLX_STEP_OVERHEAD_US", knob::RCCLX_STEP_OVERHEAD_US(hints));
  p.reduceGbps = positiveFigure("RCCLX_REDUCE_GBPS", knob::RCCLX_REDUCE_GBPS(hints));
  return p;
}

SelectorConfig selectorConfigFrom(const ctran::config::Overrides* hints) {
  SelectorConfig cfg;
  cfg.flatMaxBytes = static_cast<size_t>(knob::RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES(hints));
  cfg.treeMaxBytes = static_cast<size_t>(knob::RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES(hints));
  cfg.gpuFlatMaxBytes = static_cast<size_t>(knob::RCCLX_GPU_FLAT_MAX_BYTES(hints));
  cfg.gpuTreeMaxBytes = static_cast<size_t>(knob::RCCLX_GPU_TREE_MAX_BYTES(hints));
  const std::string algo = knob::RCCLX_ALLREDUCE_ALGO(hints);
  cfg.forced = parseAlgo(algo, "RCCLX_ALLREDUCE_ALGO");
  cfg.forcedBy = "RCCLX_ALLREDUCE_ALGO=" + algo;
  cfg.cost = costParamsFrom(hints);
  cfg.allGather = forcedAlgoFrom("RCCLX_ALLGATHER_ALGO", knob::RCCLX_ALLGATHER_ALGO(hints));
  cfg.reduceScatter =
      forcedAlgoFrom("RCCLX_REDUCESCATTER_ALGO", knob::RCCLX_REDUCESCATTER_ALGO(hints));
  cfg.broadcast = forcedAlgoFrom("RCCLX_BROADCAST_ALGO", knob::RCCLX_BROADCAST_ALGO(hints));
  cfg.reduce = forcedAlgoFrom("RCCLX_REDUCE_ALGO", knob::RCCLX_REDUCE_ALGO(hints));
  return cfg;
}

SelectorConfig withCallHint(const SelectorConfig& cfg, const std::string& hint) {
  SelectorConfig out = cfg;
  if (hint.empty()) return out;
  out.forced = hint == "auto" ? AllReduceAlgo::kAuto : parseAlgo(hint, "all_reduce algo hint");
  out.forcedBy = "algo='" + hint + "'";
  return out;
}

std::string Selection::reason() const {
  switch (rule) {
    case SelectRule::kForced: return ctran::strCat("forced by ", forcedBy);
    case SelectRule::kGpuFlatMax:
      return ctran::strCat("GPU, ", bytes, " bytes <= flat max ", limit);
    case SelectRule::kGpuTreeMax:
      return ctran::strCat("GPU, ", bytes, " bytes <= tree max ", limit);
    case SelectRule::kGpuAboveTree:
      return ctran::strCat("GPU, ", bytes, " bytes > tree max ", limit);
    case SelectRule::kMultiHost: return ctran::strCat("ranks span ", limit, " hosts");
    case SelectRule::kNoDirectAccess:
      return "no direct access to peers (tcp transport or DDA disabled)";
    case SelectRule::kFlatMax: return ctran::strCat(bytes, " bytes <= flat max ", limit);
    case SelectRule::kTreeMax: return ctran::strCat(bytes, " bytes <= tree max ", limit);
    case SelectRule::kAboveTree: return ctran::strCat(bytes, " bytes > tree max ", limit);
    case SelectRule::kAboveTreeOrdered:
      return ctran::strCat(bytes, " bytes > tree max ", limit,
                           ", deterministic (fewer bytes moved than the direct ring)");
    case SelectRule::kCostModel: return cost.reason();
    case SelectRule::kOneHost: return "every rank on one host";
  }
  return "?";
}

namespace {

// The fewest ranks for which auto takes dda_large above the tree (deterministic reductions).
constexpr int kDdaLargeMinRanks = 3;

// A selection by `rule`, which compared `bytes` with `limit`.
Selection byRule(AllReduceAlgo algo, SelectRule rule, size_t bytes, size_t limit) {
  Selection s;
  s.algo = algo;
  s.rule = rule;
  s.bytes = bytes;
  s.limit = limit;
  return s;
}

Selection forced(const SelectorConfig& cfg) {
  Selection s = byRule(cfg.forced, SelectRule::kForced, 0, 0);
  s.forcedBy = cfg.forcedBy.c_str();
  return s;
}

// Device buffers: dda_flat, dda_tree, dda_large on one host; nothing else yet.
Selection selectGpu(const SelectorInput& in, const SelectorConfig& cfg) {
  if (in.nHosts > 1 || !in.directAccess) {
    throw ctran::InvalidArgument(ctran::strCat(
        "all_reduce on GPU buffers needs every rank on one host with the GPU staging mapped "
        "(a communicator created with a device), but the communicator spans ",
        in.nHosts, " host(s)", in.directAccess ? "" : " and has no GPU staging"));
  }
  if (cfg.forced == AllReduceAlgo::kRing || cfg.forced == AllReduceAlgo::kFlat ||
      cfg.forced == AllReduceAlgo::kHierarchical) {
    throw ctran::InvalidArgument(ctran::strCat("all_reduce: algorithm ", algoName(cfg.forced),
                                               " is not implemented on GPU buffers (", cfg.forcedBy,
                                               "); use auto, dda_flat, dda_tree or dda_large"));
  }
  if (cfg.forced != AllReduceAlgo::kAuto) return forced(cfg);
  if (in.bytes <= cfg.gpuFlatMaxBytes)
    return byRule(AllReduceAlgo::kDdaFlat, SelectRule::kGpuFlatMax, in.bytes, cfg.gpuFlatMaxBytes);
  if (in.bytes <= cfg.gpuTreeMaxBytes)
    return byRule(AllReduceAlgo::kDdaTree, SelectRule::kGpuTreeMax, in.bytes, cfg.gpuTreeMaxBytes);
  return byRule(AllReduceAlgo::kDdaLarge, SelectRule::kGpuAboveTree, in.bytes, cfg.gpuTreeMaxBytes);
}

// Several hosts with a known layout: the cost model's cheapest form.
CostEstimate costOf(CostCollective c, const SelectorInput& in, const SelectorConfig& cfg) {
  return estimateCost(c, in.bytes, *in.hostSizes, cfg.cost, in.rootHostRanks);
}

void refuseHierarchicalOnOneHost(const char* collective, const SelectorInput& in,
                                 const std::string& forcedBy) {
  if (in.nHosts > 1) return;
  throw ctran::InvalidArgument(ctran::strCat(
      collective,
      ": algorithm hierarchical needs ranks on more than one host, but the "
      "communicator's ",
      in.nranks, " ranks are all on one host (", forcedBy, "); use auto, flat or ring"));
}

}  // namespace

Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg) {
  if (in.gpu) return selectGpu(in, cfg);
  const bool ddaPossible = in.nHosts == 1 && in.directAccess;
  if (cfg.forced != AllReduceAlgo::kAuto) {
    bool dda = cfg.forced == AllReduceAlgo::kDdaFlat || cfg.forced == AllReduceAlgo::kDdaTree ||
               cfg.forced == AllReduceAlgo::kDdaLarge;
    if (dda && !ddaPossible) {
      throw ctran::InvalidArgument(
          ctran::strCat("all_reduce: algorithm ", algoName(cfg.forced),
                        " needs every rank on one host with "
                        "direct access to peers' memory, but the communicator spans ",
                        in.nHosts, " host(s)",
                        in.directAccess ? ""
                                        : " without direct access (tcp transport or "
                                          "RCCLX_DDA_ENABLE=0)",
                        " (", cfg.forcedBy, ")"));
    }
    if (cfg.forced == AllReduceAlgo::kHierarchical)
      refuseHierarchicalOnOneHost("all_reduce", in, cfg.forcedBy);
    return forced(cfg);
  }
  if (!ddaPossible) {
    if (in.nHosts > 1 && in.hostSizes != nullptr) {
      Selection s = byRule(AllReduceAlgo::kRing, SelectRule::kCostModel, in.bytes,
                           static_cast<size_t>(in.nHosts));
      s.cost = costOf(CostCollective::kAllReduce, in, cfg);
      const AllReduceAlgo byForm[kCostForms] = {AllReduceAlgo::kFlat, AllReduceAlgo::kRing,
                                                AllReduceAlgo::kHierarchical};
      s.algo = byForm[int(s.cost.best)];
      return s;
    }
    if (in.nHosts > 1)
      return byRule(AllReduceAlgo::kRing, SelectRule::kMultiHost, in.bytes,
                    static_cast<size_t>(in.nHosts));
    return byRule(AllReduceAlgo::kRing, SelectRule::kNoDirectAccess, in.bytes, 0);
  }
  if (in.bytes <= cfg.flatMaxBytes)
    return byRule(AllReduceAlgo::kDdaFlat, SelectRule::kFlatMax, in.bytes, cfg.flatMaxBytes);
  if (in.bytes <= cfg.treeMaxBytes)
    return byRule(AllReduceAlgo::kDdaTree, SelectRule::kTreeMax, in.bytes, cfg.treeMaxBytes);
  // In the fold order, dda_large moves fewer bytes than the direct ring and measured faster from
  // 3 ranks (not at 2); unordered, the classic ring (partial sums passed along) stays the fastest.
  if (in.deterministic && in.nranks >= kDdaLargeMinRanks)
    return byRule(AllReduceAlgo::kDdaLarge, SelectRule::kAboveTreeOrdered, in.bytes,
                  cfg.treeMaxBytes);
  return byRule(AllReduceAlgo::kRing, SelectRule::kAboveTree, in.bytes, cfg.treeMaxBytes);
}

CollectiveSelection selectCollective(CostCollective c, const SelectorInput& in,
                                     const SelectorConfig& cfg) {
  const ForcedAlgo& f = cfg.forcedFor(c);
  CollectiveSelection out;
  out.why.bytes = in.bytes;
  if (f.algo != CollectiveAlgo::kAuto) {
    if (f.algo == CollectiveAlgo::kHierarchical)
      refuseHierarchicalOnOneHost(costCollectiveName(c), in, f.by);
    out.algo = f.algo;
    out.why.rule = SelectRule::kForced;
    out.why.forcedBy = f.by.c_str();
    return out;
  }
  out.algo = CollectiveAlgo::kRing;
  if (in.nHosts <= 1) {
    out.why.rule = SelectRule::kOneHost;
  } else if (in.hostSizes == nullptr) {
    out.why.rule = SelectRule::kMultiHost;
    out.why.limit = static_cast<size_t>(in.nHosts);
  } else {
    out.why.rule = SelectRule::kCostModel;
    out.why.cost = costOf(c, in, cfg);
    const CollectiveAlgo byForm[kCostForms] = {CollectiveAlgo::kFlat, CollectiveAlgo::kRing,
                                               CollectiveAlgo::kHierarchical};
    out.algo = byForm[int(out.why.cost.best)];
  }
  return out;
}

}  // namespace rcclx
