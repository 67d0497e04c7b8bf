// Implementation of plan.hpp: every choice of how a GPU allreduce runs, in one place.
//
// dda_flat: one-shot push. From flat_lines_min_bytes, where the message's lines from every
// source fit the line region, in 128-byte lines (1/16 of flag bytes); below, or where lines
// are unavailable or do not fit, in LL lines, in pieces of the flat slot when larger.
// dda_tree: reduce-scatter then all-gather, latency-oriented. Messages that fit the line region
// (and tree_lines_max_bytes) run as lines (no fence, no flag round trip); larger ones, and every
// one without line kernels, run the two-shot kernel with a grid that grows with the message (at
// least treeMinBlockUnits units per block and segment, at most treeMaxBlocks blocks) and one
// round when the staging holds the message, the first blocks starting ahead of the others
// (treeStaggerBytes). With the output mapped on every rank the two-shot stores its all-gather
// into the peers' outputs; from tree_symmetric_min_bytes that beats the lines.
// dda_large: the two-shot kernel shaped for bandwidth: a fixed grid of largeBlocks blocks, each
// moving largeChunkUnits units per segment and round through two staging slots, so while one
// block waits for a flag others keep NVLink busy; any size streams through the fixed staging.
#include "device/allreduce/plan.hpp"

#include <algorithm>

#include "ctran/checks.hpp"

namespace rcclx::gpu {
namespace {

size_t divUp(size_t x, size_t by) { return (x + by - 1) / by; }

/// Units in each of the nranks segments of `count` elements of `type` (the last may be shorter).
size_t segmentUnits(size_t count, DataType type, int nranks) {
  const size_t units = divUp(count, kUnitBytes / dataTypeSize(type));
  return divUp(units, static_cast<size_t>(nranks));
}

/// The flat LL kernel's grid for `units` units: one thread per unit, only the warps needed,
/// up to flatThreads threads and flatMaxBlocks blocks (and `maxBlocks`).
LaunchShape flatLlShape(size_t units, const Tuning& tu, int maxBlocks) {
  const size_t needThreads = divUp(units, kWarpThreads) * kWarpThreads;
  LaunchShape s;
  s.threads = static_cast<int>(needThreads < static_cast<size_t>(tu.flatThreads) ? needThreads
                                                                                 : tu.flatThreads);
  const size_t want = divUp(units, static_cast<size_t>(s.threads));
  const size_t most =
      static_cast<size_t>(tu.flatMaxBlocks < maxBlocks ? tu.flatMaxBlocks : maxBlocks);
  s.blocks = static_cast<int>(want < most ? want : most);
  return s;
}

/// dda_tree's two-shot: the grid grows with the message, one round when the staging holds it.
TwoShotShape treeTwoShot(const GpuPlanInput& in, size_t seg) {
  const Tuning& tu = in.tuning;
  const size_t rawBytes = in.layout.rawBytes;
  const size_t minUnits = tu.treeMinBlockUnits > 0 ? tu.treeMinBlockUnits : 1;
  const size_t want = divUp(seg, minUnits);
  const size_t maxBlocks = static_cast<size_t>(in.coResidency.fit(
      WaitingKernel::kTwoShot, std::min(tu.treeMaxBlocks, kMaxBlocks), tu.treeThreads));
  TwoShotShape s;
  s.blocks = static_cast<int>(want < 1 ? 1 : (want > maxBlocks ? maxBlocks : want));
  s.threads = tu.treeThreads;
  s.segUnits = seg;
  s.chunkUnits = divUp(seg, static_cast<size_t>(s.blocks));
  s.slots = 1;
  if (s.chunkUnits > twoShotMaxChunkUnits(rawBytes, in.nranks, s.blocks, 1)) {
    s.slots = 2;
    s.chunkUnits = twoShotMaxChunkUnits(rawBytes, in.nranks, s.blocks, 2);
  }
  // Staggered start: the first X blocks push about treeStaggerBytes of reduce-scatter before
  // the others start, so their turn (release fence, flag, wait) overlaps the rest of the
  // reduce-scatter on the link instead of every block turning at once with the link idle.
  const size_t pushedPerBlock = s.chunkUnits * kUnitBytes * static_cast<size_t>(in.nranks - 1);
  if (s.slots == 1 && tu.treeStaggerBytes > 0 && pushedPerBlock > 0) {
    const size_t x = divUp(tu.treeStaggerBytes, pushedPerBlock);
    if (x < static_cast<size_t>(s.blocks)) s.staggerBlocks = static_cast<int>(x);
  }
  return s;
}

/// dda_large's two-shot: a fixed grid pipelined through two slots (one round when the chunk
/// covers a block's share).
TwoShotShape largeTwoShot(const GpuPlanInput& in, size_t seg) {
  const Tuning& tu = in.tuning;
  const size_t rawBytes = in.layout.rawBytes;
  const size_t maxBlocks = static_cast<size_t>(in.coResidency.fit(
      WaitingKernel::kTwoShot, std::min(tu.largeBlocks, kMaxBlocks), tu.largeThreads));
  TwoShotShape s;
  s.blocks = static_cast<int>(seg < maxBlocks ? (seg < 1 ? 1 : seg) : maxBlocks);
  s.threads = tu.largeThreads;
  s.segUnits = seg;
  size_t chunk = tu.largeChunkUnits > 0 ? tu.largeChunkUnits : 1;
  const size_t perBlock = divUp(seg, static_cast<size_t>(s.blocks));
  if (chunk >= perBlock) {
    chunk = perBlock;  // one round: a single slot
    s.slots = 1;
  } else {
    s.slots = 2;
  }
  const size_t fit = twoShotMaxChunkUnits(rawBytes, in.nranks, s.blocks, s.slots);
  if (chunk > fit) {
    chunk = fit;
    s.slots = 2;
    const size_t fit2 = twoShotMaxChunkUnits(rawBytes, in.nranks, s.blocks, 2);
    if (chunk > fit2) chunk = fit2;
  }
  s.chunkUnits = chunk;
  return s;
}

/// Whether the line kernels can run this call at all: the line kernels combine ranks 0 and 1
/// together, so they need two ranks (one rank runs a kernel only for PREMUL_SUM's scaling).
bool linesUsable(const GpuPlanInput& in) {
  return in.linesAvailable && in.nranks >= 2 && in.layout.linesSlotBytes > 0;
}

void planFlat(const GpuPlanInput& in, bool pdl, GpuAllReducePlan& p) {
  const Tuning& tu = in.tuning;
  const size_t lineRegion = 2 * in.layout.linesSlotBytes;
  if (!linesUsable(in)) {
    p.why = PlanReason::kFlatNoLines;
  } else if (p.bytes < tu.flatLinesMinBytes) {
    p.why = PlanReason::kFlatBelowLinesMin;
    p.limit = tu.flatLinesMinBytes;
  } else if (messageLines(p.bytes) * kLineBytes > lineRegion) {
    p.why = PlanReason::kFlatOverLineRegion;
    p.limit = lineRegion;
  } else {  // one launch, whatever the size
    p.kernel = GpuKernel::kFlatLines;
    p.why = PlanReason::kFlatLines;
    p.limit = tu.flatLinesMinBytes;
    p.shape = linesGrid(messageLines(p.bytes), tu,
                        in.coResidency.maxBlocks(WaitingKernel::kLines, tu.linesThreads));
    p.pdl = pdl;
    return;
  }
  p.kernel = GpuKernel::kFlatLl;
  // Pieces of whole 16-byte units, so every piece keeps the buffers' alignment. (A layout
  // without flat slots gives one piece, which the launcher refuses.)
  const size_t perUnit = kUnitBytes / dataTypeSize(p.type);
  const size_t piece = in.layout.flatPayloadBytes() / kUnitBytes * perUnit;
  if (piece > 0 && p.count > piece) {
    p.pieces = divUp(p.count, piece);
    p.pieceCount = piece;
  }
  const size_t lastCount = p.count - (p.pieces - 1) * p.pieceCount;
  const int most = in.coResidency.maxBlocks(WaitingKernel::kFlatLl, tu.flatThreads);
  p.shape = flatLlShape(divUp(p.pieceCount, perUnit), tu, most);
  p.lastShape = flatLlShape(divUp(lastCount, perUnit), tu, most);
  // Pieces launch plainly: overlapped launches let all of a call's pieces be scheduled at
  // once, each waiting on the one before (1.3-1.5x slower at 4-256 MiB, measured).
  p.pdl = pdl && p.pieces == 1;
}

void planTree(const GpuPlanInput& in, bool pdl, GpuAllReducePlan& p) {
  const Tuning& tu = in.tuning;
  const size_t segLines = linesPerSegment(p.bytes, in.nranks);
  const bool linesFit = linesUsable(in) && p.bytes <= tu.treeLinesMaxBytes &&
                        segLines * kLineBytes <= in.layout.linesSlotBytes;
  // An output every peer maps lets the two-shot store its all-gather straight into the peers'
  // outputs (no copy out of staging): from treeSymmetricMinBytes that beats the lines, and
  // where the lines do not fit the two-shot runs anyway.
  const bool pays = p.bytes >= tu.treeSymmetricMinBytes || !linesFit;
  p.registrationPays = pays && !in.symmetricOutput;
  const bool zeroCopy = in.symmetricOutput && pays;
  p.pdl = pdl;
  if (linesFit && !zeroCopy) {
    p.kernel = GpuKernel::kTreeLines;
    p.why = PlanReason::kTreeLines;
    p.limit = tu.treeLinesMaxBytes;
    p.shape =
        linesGrid(segLines, tu, in.coResidency.maxBlocks(WaitingKernel::kLines, tu.linesThreads));
    return;
  }
  if (linesFit) {
    p.why = PlanReason::kTreeSymmetric;
    p.limit = tu.treeSymmetricMinBytes;
  } else if (!linesUsable(in)) {
    p.why = PlanReason::kTreeNoLines;
  } else if (p.bytes > tu.treeLinesMaxBytes) {
    p.why = PlanReason::kTreeOverLinesMax;
    p.limit = tu.treeLinesMaxBytes;
  } else {
    p.why = PlanReason::kTreeOverLineRegion;
    p.limit = in.layout.linesSlotBytes;
  }
  p.kernel = GpuKernel::kTwoShot;
  p.zeroCopy = zeroCopy;
  p.twoShot = treeTwoShot(in, segmentUnits(p.count, p.type, in.nranks));
}

void planLarge(const GpuPlanInput& in, bool pdl, GpuAllReducePlan& p) {
  p.kernel = GpuKernel::kTwoShot;
  p.why = PlanReason::kLarge;
  p.zeroCopy = in.symmetricOutput;
  p.registrationPays = !in.symmetricOutput;
  p.pdl = pdl;
  p.twoShot = largeTwoShot(in, segmentUnits(p.count, p.type, in.nranks));
}

/// The blocks of the plan's (first) launch.
int launchBlocks(const GpuAllReducePlan& p) {
  return p.kernel == GpuKernel::kTwoShot ? p.twoShot.blocks : p.shape.blocks;
}

/// The threads of each block of the plan's launches.
int launchThreads(const GpuAllReducePlan& p) {
  return p.kernel == GpuKernel::kTwoShot ? p.twoShot.threads : p.shape.threads;
}

/// Whose occupancy bounds the plan's kernel (a kernel that waits on peers).
WaitingKernel waitingKernelOf(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::kFlatLl: return WaitingKernel::kFlatLl;
    case GpuKernel::kTwoShot: return WaitingKernel::kTwoShot;
    default: return WaitingKernel::kLines;  // the line kernels (kNone and kCopy never wait)
  }
}

}  // namespace

const char* gpuKernelName(GpuKernel kernel) {
  switch (kernel) {
    case GpuKernel::kNone: return "none";
    case GpuKernel::kCopy: return "copy";
    case GpuKernel::kFlatLl: return "flat_ll";
    case GpuKernel::kFlatLines: return "flat_lines";
    case GpuKernel::kTreeLines: return "tree_lines";
    case GpuKernel::kTwoShot: return "two_shot";
  }
  return "?";
}

const char* planReasonText(PlanReason reason) {
  switch (reason) {
    case PlanReason::kNoElements: return "no elements";
    case PlanReason::kNotOnGpu: return "the algorithm has no GPU kernel";
    case PlanReason::kOneRankInPlace: return "one rank, in place: nothing to move";
    case PlanReason::kOneRankCopy: return "one rank: the input copied to the output";
    case PlanReason::kFlatLines:
      return "at least flat_lines_min_bytes and its lines fit the line region";
    case PlanReason::kFlatNoLines: return "no line kernels (this GPU, one rank, or no line region)";
    case PlanReason::kFlatBelowLinesMin: return "below flat_lines_min_bytes";
    case PlanReason::kFlatOverLineRegion: return "its lines exceed the line region";
    case PlanReason::kTreeLines:
      return "up to tree_lines_max_bytes and its segment's lines fit the line region";
    case PlanReason::kTreeSymmetric:
      return "output mapped on every rank, from tree_symmetric_min_bytes";
    case PlanReason::kTreeNoLines: return "no line kernels (this GPU, one rank, or no line region)";
    case PlanReason::kTreeOverLinesMax: return "above tree_lines_max_bytes";
    case PlanReason::kTreeOverLineRegion: return "its segment's lines exceed the line region";
    case PlanReason::kLarge: return "dda_large pipelines the two-shot";
  }
  return "?";
}

LaunchShape linesGrid(size_t lines, const Tuning& tu, int most) {
  const size_t minLines = tu.linesMinWarpLines > 0 ? tu.linesMinWarpLines : 1;
  const size_t warps = divUp(lines, minLines);
  const size_t maxBlocks = static_cast<size_t>(std::min({tu.linesMaxBlocks, kMaxLineBlocks, most}));
  const size_t blocks = warps < 1 ? 1 : (warps < maxBlocks ? warps : maxBlocks);
  const size_t maxWarpsPerBlock = static_cast<size_t>(tu.linesThreads) / kWarpThreads;
  size_t perBlock = divUp(warps, blocks);
  if (perBlock > maxWarpsPerBlock) perBlock = maxWarpsPerBlock;
  if (perBlock < 1) perBlock = 1;
  LaunchShape g;
  g.blocks = static_cast<int>(blocks);
  g.threads = static_cast<int>(perBlock) * kWarpThreads;
  return g;
}

GpuAllReducePlan planGpuAllReduce(const GpuPlanInput& in) {
  GpuAllReducePlan p;
  p.family = in.family;
  // Bitwise operators run on the bytes (kernelType), whatever the integer width.
  p.type = kernelType(in.type, in.op);
  p.count = in.count * dataTypeSize(in.type) / dataTypeSize(p.type);
  p.bytes = p.count * dataTypeSize(p.type);
  p.pieceCount = p.count;
  if (p.count == 0) {
    p.why = PlanReason::kNoElements;
    return p;
  }
  if (in.nranks == 1 && in.op != RedOp::kPreMulSum) {  // PREMUL_SUM scales even on one rank
    p.kernel = in.inPlace ? GpuKernel::kNone : GpuKernel::kCopy;
    p.why = in.inPlace ? PlanReason::kOneRankInPlace : PlanReason::kOneRankCopy;
    return p;
  }
  p.sharedGpu = in.coResidency.shared();
  p.keepSharedMemoryFree = in.coResidency.keepSharedMemoryFree();
  const bool pdl = in.tuning.pdl && in.pdlCapable;
  switch (in.family) {
    case AllReduceAlgo::kDdaFlat: planFlat(in, pdl, p); break;
    case AllReduceAlgo::kDdaTree: planTree(in, pdl, p); break;
    case AllReduceAlgo::kDdaLarge: planLarge(in, pdl, p); break;
    default: p.why = PlanReason::kNotOnGpu; break;
  }
  // Where ranks share the GPU and MPS does not split its SMs, early launch runs one kernel
  // ahead, and only where two grids fit (co_residency.hpp).
  if (p.pdl && !in.coResidency.earlyLaunchSafe()) {
    p.pdl = in.coResidency.earlyLaunchFits(waitingKernelOf(p.kernel), launchBlocks(p),
                                           launchThreads(p));
    p.pdlOneAhead = p.pdl;
  }
  if (p.sharedGpu && p.kernel != GpuKernel::kNone && p.kernel != GpuKernel::kCopy) {
    GpuPlanInput alone = in;
    alone.coResidency = CoResidency();
    const GpuAllReducePlan unshared = planGpuAllReduce(alone);
    if (launchBlocks(unshared) != launchBlocks(p)) p.unsharedBlocks = launchBlocks(unshared);
  }
  return p;
}

std::string GpuAllReducePlan::describe() const {
  std::string s = ctran::strCat(algoName(family), ": ", gpuKernelName(kernel),
                                zeroCopy ? " zero-copy" : "", " (", planReasonText(why), "; ",
                                count, " x ", dataTypeName(type), " = ", bytes, " bytes");
  if (limit > 0) s += ctran::strCat(", limit ", limit);
  s += ")";
  switch (kernel) {
    case GpuKernel::kFlatLl:
      if (pieces > 1) {
        s += ctran::strCat(", ", pieces, " pieces of ", pieceCount, ": ", shape.blocks, " x ",
                           shape.threads, " threads, the last ", lastShape.blocks, " x ",
                           lastShape.threads);
      } else {
        s += ctran::strCat(", ", shape.blocks, " x ", shape.threads, " threads");
      }
      break;
    case GpuKernel::kFlatLines:
    case GpuKernel::kTreeLines:
      s += ctran::strCat(", ", shape.blocks, " x ", shape.threads, " threads");
      break;
    case GpuKernel::kTwoShot:
      s += ctran::strCat(", ", twoShot.blocks, " x ", twoShot.threads, " threads, segment ",
                         twoShot.segUnits, " units, chunk ", twoShot.chunkUnits, " units, ",
                         twoShot.slots, twoShot.slots == 1 ? " slot" : " slots");
      if (twoShot.staggerBlocks > 0) s += ctran::strCat(", ", twoShot.staggerBlocks, " first");
      break;
    case GpuKernel::kNone:
    case GpuKernel::kCopy: return s;
  }
  if (unsharedBlocks > 0)
    s += ctran::strCat(", shrunk from ", unsharedBlocks,
                       " blocks to fit beside the ranks sharing the GPU");
  if (pdlOneAhead) {
    s += ", pdl one kernel ahead (ranks share the GPU)";
  } else {
    s += pdl ? ", pdl" : (sharedGpu ? ", no pdl (ranks share the GPU)" : ", no pdl");
  }
  return s;
}

}  // namespace rcclx::gpu
