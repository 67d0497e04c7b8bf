// The allreduce selector: a pure function from the call and the configuration to an
// algorithm and the reason for it. Unit-testable without processes or hardware.
#pragma once

#include <cstddef>
#include <string>

#include "rcclx/types.hpp"

namespace rcclx {

enum class AllReduceAlgo { kAuto, kRing, kDdaFlat, kDdaTree };

/// "auto", "ring", "dda_flat", "dda_tree".
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
  bool gpu = false;
};

/// Thresholds and overrides (from the environment, or set by tests).
struct SelectorConfig {
  AllReduceAlgo forced = AllReduceAlgo::kAuto;
  std::string forcedBy;  ///< "RCCLX_ALLREDUCE_ALGO=dda_tree" or "algo='ring'" (for messages)
  size_t flatMaxBytes = 32 << 10;
  size_t treeMaxBytes = size_t{1} << 30;
};

struct Selection {
  AllReduceAlgo algo;
  std::string reason;
};

/// Reads RCCLX_ALLREDUCE_ALGO and the RCCL_DDA_* thresholds; `hint` (a per-call algorithm
/// name, may be empty) overrides the environment's choice.
SelectorConfig selectorConfigFromEnv(const std::string& hint = "");

/// Picks the algorithm. Throws InvalidArgument when a forced algorithm cannot run here.
Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg);

}  // namespace rcclx
