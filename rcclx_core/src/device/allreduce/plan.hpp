// The GPU allreduce plan: a pure function from one call (the algorithm family the selector
// chose, the message, the ranks, the output, what the GPU has, the staging and the tuning) to
// how it runs: which kernel, zero-copy or staged, in how many pieces, with which launch shape,
// and why. GpuAllReduce::run launches what the plan says; the launchers decide nothing. Host-only
// and compiled in every build, so it is unit-tested on the CPU (tests/native).
#pragma once

#include <cstddef>
#include <string>

#include "device/allreduce/launch.hpp"
#include "device/allreduce/tuning.hpp"
#include "device/co_residency.hpp"
#include "rcclx/types.hpp"
#include "selector.hpp"

namespace rcclx::gpu {

/// What the plan launches.
enum class GpuKernel {
  kNone,       ///< nothing: no elements, one rank in place, or a family the GPU lacks
  kCopy,       ///< one rank: a device-to-device copy of the input into the output
  kFlatLl,     ///< dda_flat's one-shot in LL lines (allreduce_flat_ll.cu), maybe in pieces
  kFlatLines,  ///< dda_flat's one-shot in 128-byte lines (allreduce_flat_lines.cu)
  kTreeLines,  ///< dda_tree's reduce-scatter + all-gather in lines (allreduce_tree_lines.cu)
  kTwoShot,    ///< the two-shot kernel (allreduce_two_shot.cu), shaped for dda_tree or dda_large
};

/// "none", "copy", "flat_ll", "flat_lines", "tree_lines", "two_shot".
const char* gpuKernelName(GpuKernel kernel);

/// Why the plan chose its kernel; PlanReason's text (planReasonText) goes into the log.
enum class PlanReason {
  kNoElements,          ///< count 0
  kNotOnGpu,            ///< the family has no GPU kernel (run() throws)
  kOneRankInPlace,      ///< one rank, output == input, no scaling: nothing to move
  kOneRankCopy,         ///< one rank, no scaling: the input copied to the output
  kFlatLines,           ///< dda_flat: at least flat_lines_min_bytes and the lines fit the region
  kFlatNoLines,         ///< dda_flat: no line kernels here (GPU, one rank or no line region)
  kFlatBelowLinesMin,   ///< dda_flat: below flat_lines_min_bytes
  kFlatOverLineRegion,  ///< dda_flat: the message's lines exceed the line region
  kTreeLines,           ///< dda_tree: up to tree_lines_max_bytes and the lines fit the region
  kTreeSymmetric,       ///< dda_tree: symmetric output from tree_symmetric_min_bytes: zero-copy
  kTreeNoLines,         ///< dda_tree: no line kernels here (GPU, one rank or no line region)
  kTreeOverLinesMax,    ///< dda_tree: above tree_lines_max_bytes
  kTreeOverLineRegion,  ///< dda_tree: a segment's lines exceed the line region
  kLarge,               ///< dda_large: always the pipelined two-shot
};

/// A static string stating `reason` (for the log).
const char* planReasonText(PlanReason reason);

/// One call, as the plan sees it.
struct GpuPlanInput {
  AllReduceAlgo family = AllReduceAlgo::kDdaFlat;  ///< kDdaFlat, kDdaTree or kDdaLarge
  size_t count = 0;                                ///< elements of `type`
  DataType type = DataType::kFloat32;
  RedOp op = RedOp::kSum;  ///< one gpuSupports() accepts for `type`
  int nranks = 1;
  bool inPlace = false;  ///< the output is the input
  /// Every rank's output is mapped here (a symmetric buffer, or a captured output registered
  /// for the graph): the two-shot kernel can store its all-gather straight into the peers'.
  bool symmetricOutput = false;
  /// The build and GPU have the line kernels (NVIDIA only: they rely on a 128-byte warp store
  /// arriving whole over NVLink).
  bool linesAvailable = false;
  bool pdlCapable = false;  ///< the GPU has programmatic dependent launch (sm_90 and later)
  StagingLayout layout;
  Tuning tuning;
  /// Whether ranks share GPUs: grids then fit beside the peers', launched early only where
  /// that stays safe.
  CoResidency coResidency;
};

/// How one call runs. Counts and types are the kernels' (kernelType(): bitwise operators run
/// over bytes).
struct GpuAllReducePlan {
  GpuKernel kernel = GpuKernel::kNone;
  PlanReason why = PlanReason::kNoElements;
  AllReduceAlgo family = AllReduceAlgo::kDdaFlat;
  DataType type = DataType::kFloat32;  ///< element type the kernels run
  size_t count = 0;                    ///< elements of `type`
  size_t bytes = 0;                    ///< the message
  /// The threshold or capacity (bytes) that `why` compares `bytes` with; 0 when none.
  size_t limit = 0;
  /// The two-shot kernel stores its all-gather into the peers' outputs (needs symmetricOutput).
  bool zeroCopy = false;
  /// Mapping a captured ordinary output on every rank (graph registration) would make the call
  /// zero-copy: the family gains from it and the output is not already mapped.
  bool registrationPays = false;
  /// kFlatLl: launches of pieceCount elements each, the last one the rest; else 1 of `count`.
  size_t pieces = 1;
  size_t pieceCount = 0;
  /// The grid of kFlatLl (every piece but the last), kFlatLines and kTreeLines.
  LaunchShape shape;
  /// kFlatLl: the grid of the last piece (shape, when there is one piece).
  LaunchShape lastShape;
  TwoShotShape twoShot;  ///< kTwoShot's shape
  bool pdl = false;      ///< launch with programmatic dependent launch
  /// With pdl: the kernel lets its successor be scheduled only once it has waited for its
  /// predecessor (co_residency.hpp: ranks share the GPU and MPS does not split its SMs).
  bool pdlOneAhead = false;
  /// Ranks share the GPU (coResidency): the grid may have been shrunk, and pdl is on only where
  /// MPS splits the SMs among them or two grids fit a rank's share.
  bool sharedGpu = false;
  /// The launch keeps the SMs' shared memory free (CoResidency::keepSharedMemoryFree).
  bool keepSharedMemoryFree = false;
  /// The blocks the kernel would have had on a GPU of its own, when sharing shrank its grid
  /// (0: not shrunk).
  int unsharedBlocks = 0;

  /// One line for the log: the family, the kernel and why, the numbers, the launch shape.
  std::string describe() const;
};

/// Plans one call; pure (no GPU, no environment, no state).
GpuAllReducePlan planGpuAllReduce(const GpuPlanInput& in);

/// Grid of a line kernel that moves `lines` lines per pass: one warp per linesMinWarpLines
/// lines, spread over up to linesMaxBlocks blocks (and `maxBlocks`) of up to linesThreads
/// threads.
LaunchShape linesGrid(size_t lines, const Tuning& tuning, int maxBlocks = CoResidency::kNoLimit);

}  // namespace rcclx::gpu
