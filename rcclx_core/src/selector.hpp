// The allreduce selector: a pure function from the call and the configuration to an
// algorithm and the reason for it. Unit-testable without processes or hardware.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ctran/config.hpp"
#include "rcclx/types.hpp"

namespace rcclx {

/// kDdaLarge (the two-shot kernel pipelined through the staging, for large messages) runs on
/// GPU buffers only; kRing on host buffers only, for now.
enum class AllReduceAlgo { kAuto, kRing, kDdaFlat, kDdaTree, kDdaLarge };

/// "auto", "ring", "dda_flat", "dda_tree", "dda_large".
const char* algoName(AllReduceAlgo algo);
/// Parses an algorithm name; throws InvalidArgument naming `what` otherwise.
AllReduceAlgo parseAlgo(const std::string& name, const std::string& what);

/// What the selector knows about one call.
struct SelectorInput {
  size_t bytes = 0;
  DataType type = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  int nranks = 1;
  int nHosts = 1;
  bool directAccess = true;  ///< every peer's staging memory is mapped (DDA possible)
  bool gpu = false;          ///< the buffers are device memory (directAccess: GPU staging mapped)
};

/// Thresholds and overrides (a communicator's settings, or set by tests).
struct SelectorConfig {
  AllReduceAlgo forced = AllReduceAlgo::kAuto;
  std::string forcedBy;  ///< "RCCLX_ALLREDUCE_ALGO=dda_tree" or "algo='ring'" (for messages)
  size_t flatMaxBytes = 32 << 10;
  size_t treeMaxBytes = size_t{2} << 20;
  size_t gpuFlatMaxBytes = 256 << 10;         ///< GPU: dda_flat up to here
  size_t gpuTreeMaxBytes = size_t{32} << 20;  ///< GPU: dda_tree up to here, then dda_large
};

/// Why the selector chose what it chose: a rule and the numbers it compared, formatted only
/// when someone reads it (a log line at INFO, a tool), so a call pays nothing for it.
enum class SelectRule : uint8_t {
  kForced,          ///< forced by `forcedBy`
  kGpuFlatMax,      ///< GPU, bytes <= gpu flat max
  kGpuTreeMax,      ///< GPU, bytes <= gpu tree max
  kGpuAboveTree,    ///< GPU, bytes > gpu tree max
  kMultiHost,       ///< ranks span nHosts hosts
  kNoDirectAccess,  ///< no direct access to peers
  kFlatMax,         ///< bytes <= flat max
  kTreeMax,         ///< bytes <= tree max
  kAboveTree,       ///< bytes > tree max
};

struct Selection {
  AllReduceAlgo algo = AllReduceAlgo::kAuto;
  SelectRule rule = SelectRule::kForced;
  size_t bytes = 0;
  size_t limit = 0;           ///< the threshold compared with (or the host count)
  const char* forcedBy = "";  ///< with kForced: the config's forcedBy (it outlives the call)
  /// "GPU, 1024 bytes <= flat max 262144", "forced by RCCLX_ALLREDUCE_ALGO=dda_tree", ...
  std::string reason() const;
};

/// The selector's view of the knobs (RCCLX_ALLREDUCE_ALGO, the RCCL_DDA_* and RCCLX_GPU_*
/// thresholds), from `hints` where they hold one, else the environment.
SelectorConfig selectorConfigFrom(const ctran::config::Overrides* hints);
/// `cfg` with a per-call algorithm name (CallOptions::algo) applied: "" keeps cfg's choice,
/// "auto" lets the thresholds decide, another name forces it (InvalidArgument if unknown).
SelectorConfig withCallHint(const SelectorConfig& cfg, const std::string& hint);

/// Picks the algorithm. Throws InvalidArgument when a forced algorithm cannot run here. `cfg`
/// must outlive the Selection (its reason() points at cfg.forcedBy).
Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg);

}  // namespace rcclx
