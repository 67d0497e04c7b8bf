// Implementation of selector.hpp.
#include "selector.hpp"

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
  }
  return "?";
}

AllReduceAlgo parseAlgo(const std::string& name, const std::string& what) {
  for (auto a : {AllReduceAlgo::kAuto, AllReduceAlgo::kRing, AllReduceAlgo::kDdaFlat,
                 AllReduceAlgo::kDdaTree, AllReduceAlgo::kDdaLarge}) {
    if (name == algoName(a)) return a;
  }
  throw ctran::InvalidArgument(
      ctran::strCat(what, ": unknown allreduce algorithm '", name,
                    "' (choose auto, ring, dda_flat, dda_tree or dda_large)"));
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
  }
  return "?";
}

namespace {

Selection forced(const SelectorConfig& cfg) {
  return {cfg.forced, SelectRule::kForced, 0, 0, cfg.forcedBy.c_str()};
}

// Device buffers: dda_flat, dda_tree, dda_large on one host; nothing else yet.
Selection selectGpu(const SelectorInput& in, const SelectorConfig& cfg) {
  if (in.nHosts > 1 || !in.directAccess) {
    throw ctran::InvalidArgument(ctran::strCat(
        "all_reduce on GPU buffers needs every rank on one host with the GPU staging mapped "
        "(a communicator created with a device), but the communicator spans ",
        in.nHosts, " host(s)", in.directAccess ? "" : " and has no GPU staging"));
  }
  if (cfg.forced == AllReduceAlgo::kRing) {
    throw ctran::InvalidArgument(
        ctran::strCat("all_reduce: algorithm ring is not implemented on GPU buffers (",
                      cfg.forcedBy, "); use auto, dda_flat, dda_tree or dda_large"));
  }
  if (cfg.forced != AllReduceAlgo::kAuto) return forced(cfg);
  if (in.bytes <= cfg.gpuFlatMaxBytes)
    return {AllReduceAlgo::kDdaFlat, SelectRule::kGpuFlatMax, in.bytes, cfg.gpuFlatMaxBytes};
  if (in.bytes <= cfg.gpuTreeMaxBytes)
    return {AllReduceAlgo::kDdaTree, SelectRule::kGpuTreeMax, in.bytes, cfg.gpuTreeMaxBytes};
  return {AllReduceAlgo::kDdaLarge, SelectRule::kGpuAboveTree, in.bytes, cfg.gpuTreeMaxBytes};
}

}  // namespace

Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg) {
  if (in.gpu) return selectGpu(in, cfg);
  if (cfg.forced == AllReduceAlgo::kDdaLarge) {
    throw ctran::InvalidArgument(
        ctran::strCat("all_reduce: algorithm dda_large runs on GPU buffers only (", cfg.forcedBy,
                      "); host buffers use auto, ring, dda_flat or dda_tree"));
  }
  const bool ddaPossible = in.nHosts == 1 && in.directAccess;
  if (cfg.forced != AllReduceAlgo::kAuto) {
    bool dda = cfg.forced == AllReduceAlgo::kDdaFlat || cfg.forced == AllReduceAlgo::kDdaTree;
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
    return forced(cfg);
  }
  if (!ddaPossible) {
    if (in.nHosts > 1)
      return {AllReduceAlgo::kRing, SelectRule::kMultiHost, in.bytes,
              static_cast<size_t>(in.nHosts)};
    return {AllReduceAlgo::kRing, SelectRule::kNoDirectAccess, in.bytes, 0};
  }
  if (in.bytes <= cfg.flatMaxBytes)
    return {AllReduceAlgo::kDdaFlat, SelectRule::kFlatMax, in.bytes, cfg.flatMaxBytes};
  if (in.bytes <= cfg.treeMaxBytes)
    return {AllReduceAlgo::kDdaTree, SelectRule::kTreeMax, in.bytes, cfg.treeMaxBytes};
  return {AllReduceAlgo::kRing, SelectRule::kAboveTree, in.bytes, cfg.treeMaxBytes};
}

}  // namespace rcclx
