// dda_tree on GPU buffers: reduce-scatter then all-gather by direct stores. Messages that fit the
// line region run as 128-byte lines with in-line flags (tree_lines.cu: no fence, no flag round
// trip). Larger ones, and every one on AMD, run the two-shot push kernel (two_shot.cu) shaped
// for latency: the grid grows with the message (at least treeMinBlockUnits units per block and
// segment, at most treeMaxBlocks blocks) and one round covers the whole message when the staging
// holds it, so a call costs two one-way trips and two release fences; larger messages take
// several rounds; with one round the first blocks start ahead of the others (treeStaggerBytes,
// see two_shot.cu). With the output in a symmetric buffer (Communicator::allocSymmetric) the
// two-shot kernel stores its all-gather into the peers' outputs and copies nothing out.
#include "ctran/checks.hpp"
#include "device/allreduce/launch.hpp"

namespace rcclx::gpu {

bool treeZeroCopyPays(const LaunchArgs& args) {
  // An output every peer maps lets the two-shot store its all-gather straight into the peers'
  // outputs (no copy out of staging): from treeSymmetricMinBytes that beats the lines.
  const size_t bytes = args.count * dataTypeSize(args.type);
  return bytes >= args.tuning.treeSymmetricMinBytes || !treeLinesFit(args);
}

bool treeZeroCopy(const LaunchArgs& args) {
  return args.symmetricOutput() && treeZeroCopyPays(args);
}

void launchDdaTree(const LaunchArgs& args) {
  if (!treeZeroCopy(args) && treeLinesFit(args)) {
    launchTreeLines(args);
    return;
  }
  const Tuning& tu = args.tuning;
  const size_t seg = twoShotSegmentUnits(args);
  const size_t minUnits = tu.treeMinBlockUnits > 0 ? tu.treeMinBlockUnits : 1;
  size_t want = (seg + minUnits - 1) / minUnits;
  const size_t maxBlocks =
      static_cast<size_t>(tu.treeMaxBlocks < kMaxBlocks ? tu.treeMaxBlocks : kMaxBlocks);
  TwoShotShape shape;
  shape.blocks = static_cast<int>(want < 1 ? 1 : (want > maxBlocks ? maxBlocks : want));
  shape.threads = tu.treeThreads;
  shape.chunkUnits = (seg + shape.blocks - 1) / shape.blocks;
  shape.slots = 1;
  if (shape.chunkUnits > twoShotMaxChunkUnits(args, shape.blocks, 1)) {
    shape.slots = 2;
    shape.chunkUnits = twoShotMaxChunkUnits(args, shape.blocks, 2);
  }
  // Staggered start: the first X blocks push about treeStaggerBytes of reduce-scatter before
  // the others start, so their turn (release fence, flag, wait) overlaps the rest of the
  // reduce-scatter on the link instead of every block turning at once with the link idle.
  const size_t pushedPerBlock = shape.chunkUnits * kUnitBytes * (args.window.nranks - 1);
  if (shape.slots == 1 && tu.treeStaggerBytes > 0 && pushedPerBlock > 0) {
    const size_t x = (tu.treeStaggerBytes + pushedPerBlock - 1) / pushedPerBlock;
    if (x < static_cast<size_t>(shape.blocks)) shape.staggerBlocks = static_cast<int>(x);
  }
  launchTwoShot(args, shape, "dda_tree");
}

}  // namespace rcclx::gpu
