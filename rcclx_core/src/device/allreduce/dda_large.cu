// dda_large on GPU buffers: the two-shot push kernel (two_shot.cu) shaped for bandwidth. A fixed
// grid of largeBlocks blocks, each moving largeChunkUnits units per segment and round through
// two staging slots, so while one block waits for a flag others keep NVLink busy; messages of
// any size stream through the fixed staging. An output in a symmetric buffer takes the
// all-gather straight into the peers' outputs (two_shot.cu).
#include "ctran/checks.hpp"
#include "device/allreduce/launch.hpp"

namespace rcclx::gpu {

void launchDdaLarge(const LaunchArgs& args) {
  const Tuning& tu = args.tuning;
  const size_t seg = twoShotSegmentUnits(args);
  TwoShotShape shape;
  const size_t maxBlocks =
      static_cast<size_t>(tu.largeBlocks < kMaxBlocks ? tu.largeBlocks : kMaxBlocks);
  shape.blocks = static_cast<int>(seg < maxBlocks ? (seg < 1 ? 1 : seg) : maxBlocks);
  shape.threads = tu.largeThreads;
  size_t chunk = tu.largeChunkUnits > 0 ? tu.largeChunkUnits : 1;
  const size_t perBlock = (seg + shape.blocks - 1) / shape.blocks;
  if (chunk >= perBlock) {
    chunk = perBlock;  // one round: a single slot
    shape.slots = 1;
  } else {
    shape.slots = 2;
  }
  const size_t fit = twoShotMaxChunkUnits(args, shape.blocks, shape.slots);
  if (chunk > fit) {
    chunk = fit;
    shape.slots = 2;
    const size_t fit2 = twoShotMaxChunkUnits(args, shape.blocks, 2);
    if (chunk > fit2) chunk = fit2;
  }
  shape.chunkUnits = chunk;
  launchTwoShot(args, shape, "dda_large");
}

}  // namespace rcclx::gpu
