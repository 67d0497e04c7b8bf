// The allreduce selector: a pure function from the call and the configuration to an
// algorithm and the reason for it. Unit-testable without processes or hardware.
#pragma once

#include <cstddef>
#include <string>

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

/// Thresholds and overrides (from the environment, or set by tests).
struct SelectorConfig {
  AllReduceAlgo forced = AllReduceAlgo::kAuto;
  std::string forcedBy;  ///< "RCCLX_ALLREDUCE_ALGO=dda_tree" or "algo='ring'" (for messages)
  size_t flatMaxBytes = 32 << 10;
  size_t treeMaxBytes = size_t{2} << 20;
  size_t gpuFlatMaxBytes = 256 << 10;         ///< GPU: dda_flat up to here
  size_t gpuTreeMaxBytes = size_t{32} << 20;  ///< GPU: dda_tree up to here, then dda_large
};

struct Selection {
  AllReduceAlgo algo;
  std::string reason;
};

/// Reads RCCLX_ALLREDUCE_ALGO, the RCCL_DDA_* and RCCLX_GPU_* thresholds; `hint` (a per-call
/// algorithm name, may be empty) overrides the environment's choice.
SelectorConfig selectorConfigFromEnv(const std::string& hint = "");

/// Picks the algorithm. Throws InvalidArgument when a forced algorithm cannot run here.
Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg);

}  // namespace rcclx
