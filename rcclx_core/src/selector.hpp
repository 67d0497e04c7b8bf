// The selectors: pure functions from the call and the configuration to an algorithm and the
// reason for it, for allreduce and (across hosts) all_gather, reduce_scatter, broadcast and
// reduce. Across hosts they ask the cost model (cost_model.hpp). Unit-testable without
// processes or hardware.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cost_model.hpp"
#include "ctran/config.hpp"
#include "rcclx/types.hpp"

namespace rcclx {

/// kDdaLarge: the two-shot by direct access pipelined through the staging, for large messages
/// (GPU buffers, and host buffers whose ranks share a host). kRing, kFlat (one shot over the
/// point-to-point channels, any host) and kHierarchical (phases inside and between hosts, ranks
/// on several hosts) run on host buffers only, for now.
enum class AllReduceAlgo { kAuto, kRing, kDdaFlat, kDdaTree, kDdaLarge, kFlat, kHierarchical };

/// "auto", "ring", "dda_flat", "dda_tree", "dda_large", "flat", "hierarchical".
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
  bool directAccess = true;   ///< every peer's staging memory is mapped (DDA possible)
  bool gpu = false;           ///< the buffers are device memory (directAccess: GPU staging mapped)
  bool deterministic = true;  ///< host reductions keep the fold order (RCCLX_DETERMINISTIC)
  /// Ranks on each host, in host order (the caller keeps it alive). With nHosts > 1 the cost
  /// model decides; without it (a caller that knows only the host count) ring does.
  const std::vector<int>* hostSizes = nullptr;
  int rootHostRanks = 0;  ///< broadcast and reduce: ranks on the root's host
};

/// The algorithms of all_gather, reduce_scatter, broadcast and reduce on host buffers. kRing
/// is the ring (broadcast and reduce: the pipelined chain along it), the only one on one host
/// unless forced.
enum class CollectiveAlgo { kAuto, kFlat, kRing, kHierarchical };

/// "auto", "flat", "ring", "hierarchical".
const char* collectiveAlgoName(CollectiveAlgo algo);
/// Parses a name of collectiveAlgoName(); throws InvalidArgument naming `what` otherwise.
CollectiveAlgo parseCollectiveAlgo(const std::string& name, const std::string& what);

/// A collective's forced algorithm and what forced it ("RCCLX_ALLGATHER_ALGO=flat").
struct ForcedAlgo {
  CollectiveAlgo algo = CollectiveAlgo::kAuto;
  std::string by;
};

/// Thresholds and overrides (a communicator's settings, or set by tests).
struct SelectorConfig {
  AllReduceAlgo forced = AllReduceAlgo::kAuto;
  std::string forcedBy;  ///< "RCCLX_ALLREDUCE_ALGO=dda_tree" or "algo='ring'" (for messages)
  size_t flatMaxBytes = 32 << 10;
  size_t treeMaxBytes = size_t{2} << 20;
  size_t gpuFlatMaxBytes = 256 << 10;         ///< GPU: dda_flat up to here
  size_t gpuTreeMaxBytes = size_t{32} << 20;  ///< GPU: dda_tree up to here, then dda_large
  CostParams cost;           ///< the cost model's figures (RCCLX_NET_*, RCCLX_SHM_*, ...)
  ForcedAlgo allGather;      ///< RCCLX_ALLGATHER_ALGO
  ForcedAlgo reduceScatter;  ///< RCCLX_REDUCESCATTER_ALGO
  ForcedAlgo broadcast;      ///< RCCLX_BROADCAST_ALGO
  ForcedAlgo reduce;         ///< RCCLX_REDUCE_ALGO
  /// The forced algorithm of `c` (not kAllReduce).
  const ForcedAlgo& forcedFor(CostCollective c) const;
};

/// Why the selector chose what it chose: a rule and the numbers it compared, formatted only
/// when someone reads it (a log line at INFO, a tool), so a call pays nothing for it.
enum class SelectRule : uint8_t {
  kForced,            ///< forced by `forcedBy`
  kGpuFlatMax,        ///< GPU, bytes <= gpu flat max
  kGpuTreeMax,        ///< GPU, bytes <= gpu tree max
  kGpuAboveTree,      ///< GPU, bytes > gpu tree max
  kMultiHost,         ///< ranks span nHosts hosts
  kNoDirectAccess,    ///< no direct access to peers
  kFlatMax,           ///< bytes <= flat max
  kTreeMax,           ///< bytes <= tree max
  kAboveTree,         ///< bytes > tree max
  kAboveTreeOrdered,  ///< bytes > tree max, deterministic: dda_large moves fewer bytes
  kCostModel,         ///< ranks span several hosts: the cost model's cheapest form
  kOneHost,           ///< not allreduce, every rank on one host: ring
};

struct Selection {
  AllReduceAlgo algo = AllReduceAlgo::kAuto;
  SelectRule rule = SelectRule::kForced;
  size_t bytes = 0;
  size_t limit = 0;           ///< the threshold compared with (or the host count)
  const char* forcedBy = "";  ///< with kForced: the config's forcedBy (it outlives the call)
  CostEstimate cost;          ///< with kCostModel
  /// "GPU, 1024 bytes <= flat max 262144", "forced by RCCLX_ALLREDUCE_ALGO=dda_tree", ...
  std::string reason() const;
};

/// The choice for a collective other than allreduce; reason() as Selection's.
struct CollectiveSelection {
  CollectiveAlgo algo = CollectiveAlgo::kRing;
  Selection why;
  std::string reason() const { return why.reason(); }
};

/// The selector's view of the knobs (RCCLX_ALLREDUCE_ALGO, the RCCL_DDA_* and RCCLX_GPU_*
/// thresholds), from `hints` where they hold one, else the environment.
SelectorConfig selectorConfigFrom(const ctran::config::Overrides* hints);
/// The cost model's figures from the RCCLX_SHM_*, RCCLX_NET_*, RCCLX_STEP_OVERHEAD_US and
/// RCCLX_REDUCE_GBPS knobs; throws InvalidArgument on one that is not a positive number.
CostParams costParamsFrom(const ctran::config::Overrides* hints);
/// `cfg` with a per-call algorithm name (CallOptions::algo) applied: "" keeps cfg's choice,
/// "auto" lets the thresholds decide, another name forces it (InvalidArgument if unknown).
SelectorConfig withCallHint(const SelectorConfig& cfg, const std::string& hint);

/// Picks the algorithm. Throws InvalidArgument when a forced algorithm cannot run here. `cfg`
/// must outlive the Selection (its reason() points at cfg.forcedBy).
Selection selectAllReduce(const SelectorInput& in, const SelectorConfig& cfg);

/// Picks the algorithm of all_gather, reduce_scatter, broadcast or reduce (`c`, not
/// kAllReduce) on host buffers; `in.bytes` as estimateCost() takes them. One host: ring unless
/// forced; several: the cost model's cheapest form. Throws InvalidArgument when hierarchical
/// is forced on one host. `cfg` must outlive the selection.
CollectiveSelection selectCollective(CostCollective c, const SelectorInput& in,
                                     const SelectorConfig& cfg);
/// "all_gather", "reduce_scatter", "broadcast", "reduce", "all_reduce".
const char* costCollectiveName(CostCollective c);

}  // namespace rcclx
