// Implementation of selector.hpp.
#include "selector.hpp"

#include "ctran/checks.hpp"
#include "config.hpp"

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

SelectorConfig selectorConfigFromEnv(const std::string& hint) {
  SelectorConfig cfg;
  cfg.flatMaxBytes = static_cast<size_t>(knob::RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES());
  cfg.treeMaxBytes = static_cast<size_t>(knob::RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES());
  cfg.gpuFlatMaxBytes = static_cast<size_t>(knob::RCCLX_GPU_FLAT_MAX_BYTES());
  cfg.gpuTreeMaxBytes = static_cast<size_t>(knob::RCCLX_GPU_TREE_MAX_BYTES());
  if (!hint.empty() && hint != "auto") {
    cfg.forced = parseAlgo(hint, "all_reduce algo hint");
    cfg.forcedBy = "algo='" + hint + "'";
  } else if (hint.empty()) {
    std::string env = knob::RCCLX_ALLREDUCE_ALGO();
    cfg.forced = parseAlgo(env, "RCCLX_ALLREDUCE_ALGO");
    cfg.forcedBy = "RCCLX_ALLREDUCE_ALGO=" + env;
  }
  return cfg;
}

namespace {

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
  if (cfg.forced != AllReduceAlgo::kAuto) return {cfg.forced, "forced by " + cfg.forcedBy};
  if (in.bytes <= cfg.gpuFlatMaxBytes) {
    return {AllReduceAlgo::kDdaFlat,
            ctran::strCat("GPU, ", in.bytes, " bytes <= flat max ", cfg.gpuFlatMaxBytes)};
  }
  if (in.bytes <= cfg.gpuTreeMaxBytes) {
    return {AllReduceAlgo::kDdaTree,
            ctran::strCat("GPU, ", in.bytes, " bytes <= tree max ", cfg.gpuTreeMaxBytes)};
  }
  return {AllReduceAlgo::kDdaLarge,
          ctran::strCat("GPU, ", in.bytes, " bytes > tree max ", cfg.gpuTreeMaxBytes)};
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
    return {cfg.forced, "forced by " + cfg.forcedBy};
  }
  if (!ddaPossible) {
    return {AllReduceAlgo::kRing,
            in.nHosts > 1
                ? ctran::strCat("ranks span ", in.nHosts, " hosts")
                : std::string("no direct access to peers (tcp transport or DDA disabled)")};
  }
  if (in.bytes <= cfg.flatMaxBytes) {
    return {AllReduceAlgo::kDdaFlat,
            ctran::strCat(in.bytes, " bytes <= flat max ", cfg.flatMaxBytes)};
  }
  if (in.bytes <= cfg.treeMaxBytes) {
    return {AllReduceAlgo::kDdaTree,
            ctran::strCat(in.bytes, " bytes <= tree max ", cfg.treeMaxBytes)};
  }
  return {AllReduceAlgo::kRing, ctran::strCat(in.bytes, " bytes > tree max ", cfg.treeMaxBytes)};
}

}  // namespace rcclx
