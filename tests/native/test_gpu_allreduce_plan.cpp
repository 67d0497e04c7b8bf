// rcclx_core/src/device/allreduce/plan.hpp and tuning.hpp: which kernel a GPU allreduce runs,
// zero-copy or staged, in how many pieces and with which launch shape, and the tuning table
// that sets the shapes. Computed on the host: no GPU needed. The grids expected are those of
// 32-thread warps (NVIDIA, and builds without GPU code).
#include <string>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "device/allreduce/plan.hpp"
#include "device/allreduce/tuning.hpp"

using rcclx::AllReduceAlgo;
using rcclx::DataType;
using rcclx::RedOp;
using rcclx::gpu::GpuAllReducePlan;
using rcclx::gpu::GpuKernel;
using rcclx::gpu::GpuPlanInput;
using rcclx::gpu::kTuningFields;
using rcclx::gpu::kWarpThreads;
using rcclx::gpu::LaunchShape;
using rcclx::gpu::planGpuAllReduce;
using rcclx::gpu::PlanReason;
using rcclx::gpu::StagingLayout;
using rcclx::gpu::Tuning;
using rcclx::gpu::TwoShotShape;

namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
// The staging knobs' defaults: RCCLX_GPU_FLAT_SLOT_BYTES, _STAGING_BYTES, _LINES_BYTES.
constexpr size_t kFlatSlot = 1 * kMiB;
constexpr size_t kStaging = 64 * kMiB;
constexpr size_t kLines = 8 * kMiB;

/// A call of `bytes` of float32 sum over `nranks` ranks on an NVIDIA sm_90 GPU with the
/// default staging and tuning, output not mapped.
GpuPlanInput call(AllReduceAlgo family, size_t bytes, int nranks = 2) {
  GpuPlanInput in;
  in.family = family;
  in.count = bytes / 4;
  in.type = DataType::kFloat32;
  in.op = RedOp::kSum;
  in.nranks = nranks;
  in.linesAvailable = true;
  in.pdlCapable = true;
  in.layout = StagingLayout::of(nranks, kFlatSlot, kStaging, kLines);
  return in;
}

GpuPlanInput withLayout(GpuPlanInput in, size_t flatBytes, size_t rawBytes, size_t linesBytes) {
  in.layout = StagingLayout::of(in.nranks, flatBytes, rawBytes, linesBytes);
  return in;
}

GpuPlanInput withTuning(GpuPlanInput in, const std::string& spec) {
  in.tuning.apply(spec);
  return in;
}

GpuPlanInput symmetric(GpuPlanInput in) {
  in.symmetricOutput = true;
  return in;
}

void checkGrid(const LaunchShape& s, int blocks, int threads, const char* file, int line) {
  if (s.blocks != blocks || s.threads != threads) {
    check::fail(file, line,
                "grid " + std::to_string(s.blocks) + " x " + std::to_string(s.threads) +
                    ", expected " + std::to_string(blocks) + " x " + std::to_string(threads));
  }
}

void checkTwoShot(const TwoShotShape& s, int blocks, int threads, size_t segUnits,
                  size_t chunkUnits, int slots, int staggerBlocks, const char* file, int line) {
  if (s.blocks != blocks || s.threads != threads || s.segUnits != segUnits ||
      s.chunkUnits != chunkUnits || s.slots != slots || s.staggerBlocks != staggerBlocks) {
    auto text = [](int b, int t, size_t seg, size_t chunk, int sl, int x) {
      return "{blocks=" + std::to_string(b) + ", threads=" + std::to_string(t) +
             ", segUnits=" + std::to_string(seg) + ", chunkUnits=" + std::to_string(chunk) +
             ", slots=" + std::to_string(sl) + ", staggerBlocks=" + std::to_string(x) + "}";
    };
    check::fail(file, line,
                "two-shot " +
                    text(s.blocks, s.threads, s.segUnits, s.chunkUnits, s.slots, s.staggerBlocks) +
                    ", expected " +
                    text(blocks, threads, segUnits, chunkUnits, slots, staggerBlocks));
  }
}

#define CHECK_GRID(s, blocks, threads) checkGrid((s), (blocks), (threads), __FILE__, __LINE__)
#define CHECK_TWO_SHOT(s, blocks, threads, seg, chunk, slots, stagger) \
  checkTwoShot((s), (blocks), (threads), (seg), (chunk), (slots), (stagger), __FILE__, __LINE__)

}  // namespace

TEST_CASE("layout: flat slots, raw staging and line slots from the sizes") {
  const StagingLayout l = StagingLayout::of(2, kFlatSlot, kStaging, kLines);
  CHECK_EQ(l.llSlotBytes, 2 * kMiB);  // two LL lines of 16 bytes per 16-byte unit
  CHECK_EQ(l.flatPayloadBytes(), kFlatSlot);
  CHECK_EQ(l.rawOffset, 4 * kMiB);
  CHECK_EQ(l.rawBytes, kStaging);
  CHECK_EQ(l.linesOffset, 68 * kMiB);
  // 8 MiB over 2 ranks: 524288 words per segment, 34953 lines of 15 words.
  CHECK_EQ(l.linesSlotBytes, size_t{34953} * 128);
  CHECK_EQ(l.halfBytes, 68 * kMiB + 4 * size_t{34953} * 128);
  CHECK_EQ(StagingLayout::of(2, kFlatSlot, kStaging, 0).linesSlotBytes, 0);
}

TEST_CASE("flat: LL lines below flat_lines_min_bytes, 128-byte lines from it") {
  const GpuAllReducePlan below = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 256 * kKiB - 16));
  CHECK_EQ(below.kernel, GpuKernel::kFlatLl);
  CHECK_EQ(below.why, PlanReason::kFlatBelowLinesMin);
  CHECK_EQ(below.limit, 256 * kKiB);
  CHECK_EQ(below.pieces, 1);
  CHECK_GRID(below.shape, 128, 64);  // 16383 units: 64 threads a block, the block limit
  CHECK(below.pdl);

  const GpuAllReducePlan at = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 256 * kKiB));
  CHECK_EQ(at.kernel, GpuKernel::kFlatLines);
  CHECK_EQ(at.why, PlanReason::kFlatLines);
  CHECK_EQ(at.pieces, 1);
  // 2185 lines: 547 warps of 4 lines over 256 blocks, 3 warps each.
  CHECK_GRID(at.shape, 256, 96);
  CHECK(at.pdl);
  CHECK(!at.zeroCopy);
  CHECK(!at.registrationPays);

  // The threshold is a tuning field.
  const GpuAllReducePlan tuned = planGpuAllReduce(
      withTuning(call(AllReduceAlgo::kDdaFlat, 64 * kKiB), "flat_lines_min_bytes=65536"));
  CHECK_EQ(tuned.kernel, GpuKernel::kFlatLines);
}

TEST_CASE("flat: without line kernels (AMD), one rank or line region, LL lines") {
  GpuPlanInput in = call(AllReduceAlgo::kDdaFlat, 256 * kKiB);
  in.linesAvailable = false;
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kFlatLl);
  CHECK_EQ(planGpuAllReduce(in).why, PlanReason::kFlatNoLines);
  const GpuAllReducePlan noRegion = planGpuAllReduce(
      withLayout(call(AllReduceAlgo::kDdaFlat, 256 * kKiB), kFlatSlot, kStaging, 0));
  CHECK_EQ(noRegion.kernel, GpuKernel::kFlatLl);
  CHECK_EQ(noRegion.why, PlanReason::kFlatNoLines);
}

TEST_CASE("flat: a message whose lines exceed the line region runs LL lines in pieces") {
  // Two slots of 34953 lines hold 69906 lines: 8 MiB is 69906 lines, 16 MiB is not.
  CHECK_EQ(planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 8 * kMiB)).kernel, GpuKernel::kFlatLines);
  const GpuAllReducePlan p = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 16 * kMiB));
  CHECK_EQ(p.kernel, GpuKernel::kFlatLl);
  CHECK_EQ(p.why, PlanReason::kFlatOverLineRegion);
  CHECK_EQ(p.limit, 2 * size_t{34953} * 128);
  CHECK_EQ(p.pieces, 16);  // pieces of the 1 MiB flat slot
  CHECK_EQ(p.pieceCount, 262144);
  CHECK_GRID(p.shape, 128, 64);
  CHECK_GRID(p.lastShape, 128, 64);
  CHECK(!p.pdl);  // pieces launch plainly
}

TEST_CASE("flat: pieces of the flat slot, the last one the rest, pdl off") {
  // A 4 KiB slot holds 1024 float32; 3000 take 1024 + 1024 + 952.
  GpuPlanInput in = withLayout(call(AllReduceAlgo::kDdaFlat, 12000), 4096, kStaging, kLines);
  const GpuAllReducePlan p = planGpuAllReduce(in);
  CHECK_EQ(p.kernel, GpuKernel::kFlatLl);
  CHECK_EQ(p.count, 3000);
  CHECK_EQ(p.pieces, 3);
  CHECK_EQ(p.pieceCount, 1024);
  CHECK_GRID(p.shape, 4, 64);      // 256 units
  CHECK_GRID(p.lastShape, 4, 64);  // 238 units
  CHECK(!p.pdl);

  // A small last piece launches only the warps it needs.
  in.count = 2 * 1024 + 100;
  const GpuAllReducePlan q = planGpuAllReduce(in);
  CHECK_EQ(q.pieces, 3);
  CHECK_GRID(q.lastShape, 1, 32);  // 25 units

  // One piece keeps pdl; a call of 13 float32 (4 units) takes one warp.
  in.count = 13;
  const GpuAllReducePlan one = planGpuAllReduce(in);
  CHECK_EQ(one.pieces, 1);
  CHECK_EQ(one.pieceCount, 13);
  CHECK_GRID(one.shape, 1, 32);
  CHECK_GRID(one.lastShape, 1, 32);
  CHECK(one.pdl);
}

TEST_CASE("tree: lines up to tree_lines_max_bytes, then the two-shot") {
  const GpuAllReducePlan at = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 7680 * kKiB));
  CHECK_EQ(at.kernel, GpuKernel::kTreeLines);
  CHECK_EQ(at.why, PlanReason::kTreeLines);
  CHECK_GRID(at.shape, 256, 256);  // 32768 lines per segment
  CHECK(at.pdl);
  CHECK(at.registrationPays);  // from tree_symmetric_min_bytes mapping the output pays

  const GpuAllReducePlan above = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 7680 * kKiB + 16));
  CHECK_EQ(above.kernel, GpuKernel::kTwoShot);
  CHECK_EQ(above.why, PlanReason::kTreeOverLinesMax);
  CHECK_EQ(above.limit, 7680 * kKiB);
  CHECK(!above.zeroCopy);
  // 245761 units per segment over 128 blocks of at least 512, one round; 52 blocks push the
  // first 1.5 MiB (1921 units x 16 bytes each).
  CHECK_TWO_SHOT(above.twoShot, 128, 512, 245761, 1921, 1, 52);

  // Small: the grid grows with the message.
  const GpuAllReducePlan small = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 64 * kKiB));
  CHECK_EQ(small.kernel, GpuKernel::kTreeLines);
  CHECK_GRID(small.shape, 69, 32);  // 274 lines
  CHECK(!small.registrationPays);

  // tree_lines_max_bytes=0 turns the lines off.
  const GpuAllReducePlan off = planGpuAllReduce(
      withTuning(call(AllReduceAlgo::kDdaTree, 64 * kKiB), "tree_lines_max_bytes=0"));
  CHECK_EQ(off.kernel, GpuKernel::kTwoShot);
  CHECK_TWO_SHOT(off.twoShot, 4, 512, 2048, 512, 1, 0);
  CHECK(off.registrationPays);
}

TEST_CASE("tree: the line region's capacity bounds the lines") {
  const GpuPlanInput raised =
      withTuning(call(AllReduceAlgo::kDdaTree, 8 * kMiB), "tree_lines_max_bytes=16777216");
  CHECK_EQ(planGpuAllReduce(raised).kernel, GpuKernel::kTreeLines);  // 34953 lines: one slot
  GpuPlanInput over = raised;
  over.count += 64;  // 256 bytes more: a segment of 34954 lines
  const GpuAllReducePlan p = planGpuAllReduce(over);
  CHECK_EQ(p.kernel, GpuKernel::kTwoShot);
  CHECK_EQ(p.why, PlanReason::kTreeOverLineRegion);
  CHECK_EQ(p.limit, size_t{34953} * 128);

  GpuPlanInput amd = call(AllReduceAlgo::kDdaTree, 64 * kKiB);
  amd.linesAvailable = false;
  CHECK_EQ(planGpuAllReduce(amd).kernel, GpuKernel::kTwoShot);
  CHECK_EQ(planGpuAllReduce(amd).why, PlanReason::kTreeNoLines);
}

TEST_CASE("tree: two-shot slots and stagger") {
  CHECK_TWO_SHOT(planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 8 * kMiB)).twoShot, 128, 512,
                 262144, 2048, 1, 48);
  // A staging too small for one round: two slots of what fits, no stagger.
  const GpuAllReducePlan two = planGpuAllReduce(
      withLayout(call(AllReduceAlgo::kDdaTree, 16 * kMiB), kFlatSlot, kMiB, kLines));
  CHECK_TWO_SHOT(two.twoShot, 128, 512, 524288, 64, 2, 0);
  // The stagger takes blocks only while fewer than all would push tree_stagger_bytes.
  const GpuPlanInput oneMiB =
      withTuning(call(AllReduceAlgo::kDdaTree, kMiB), "tree_lines_max_bytes=0");
  CHECK_TWO_SHOT(planGpuAllReduce(oneMiB).twoShot, 64, 512, 32768, 512, 1, 0);
  CHECK_TWO_SHOT(planGpuAllReduce(withTuning(oneMiB, "tree_stagger_bytes=65536")).twoShot, 64, 512,
                 32768, 512, 1, 8);
  CHECK_TWO_SHOT(
      planGpuAllReduce(withTuning(call(AllReduceAlgo::kDdaTree, 8 * kMiB), "tree_stagger_bytes=0"))
          .twoShot,
      128, 512, 262144, 2048, 1, 0);
}

TEST_CASE("tree: a symmetric output from tree_symmetric_min_bytes goes zero-copy") {
  const GpuAllReducePlan z = planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaTree, 6 * kMiB)));
  CHECK_EQ(z.kernel, GpuKernel::kTwoShot);
  CHECK(z.zeroCopy);
  CHECK_EQ(z.why, PlanReason::kTreeSymmetric);
  CHECK_EQ(z.limit, 6 * kMiB);
  CHECK(!z.registrationPays);  // already mapped
  CHECK_TWO_SHOT(z.twoShot, 128, 512, 196608, 1536, 1, 64);

  // Below it the lines stay, staged.
  const GpuAllReducePlan lines =
      planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaTree, 6 * kMiB - 16)));
  CHECK_EQ(lines.kernel, GpuKernel::kTreeLines);
  CHECK(!lines.zeroCopy);
  // Where the lines do not fit, a symmetric output always goes zero-copy.
  const GpuAllReducePlan big =
      planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaTree, 16 * kMiB)));
  CHECK_EQ(big.kernel, GpuKernel::kTwoShot);
  CHECK(big.zeroCopy);
  CHECK_EQ(big.why, PlanReason::kTreeOverLinesMax);

  // The same call with an ordinary output: lines, and registering the output would pay.
  const GpuAllReducePlan staged = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 6 * kMiB));
  CHECK_EQ(staged.kernel, GpuKernel::kTreeLines);
  CHECK(!staged.zeroCopy);
  CHECK(staged.registrationPays);

  // dda_flat never stores into the peers' outputs.
  const GpuAllReducePlan flat =
      planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaFlat, 6 * kMiB)));
  CHECK(!flat.zeroCopy);
  CHECK(!flat.registrationPays);
}

TEST_CASE("large: fixed grid, one slot when a chunk covers a block's share, chunks fit") {
  const GpuAllReducePlan big = planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, 64 * kMiB));
  CHECK_EQ(big.kernel, GpuKernel::kTwoShot);
  CHECK_EQ(big.why, PlanReason::kLarge);
  CHECK(big.registrationPays);
  CHECK(!big.zeroCopy);
  CHECK_TWO_SHOT(big.twoShot, 128, 512, 2097152, 4096, 2, 0);
  CHECK_TWO_SHOT(planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, kMiB)).twoShot, 128, 512, 32768,
                 256, 1, 0);
  CHECK_TWO_SHOT(planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, 400)).twoShot, 13, 512, 13, 1, 1,
                 0);
  // Staging of 1 MiB: 64 units per block and slot fit, with two slots.
  CHECK_TWO_SHOT(planGpuAllReduce(
                     withLayout(call(AllReduceAlgo::kDdaLarge, 8 * kMiB), kFlatSlot, kMiB, kLines))
                     .twoShot,
                 128, 512, 262144, 64, 2, 0);
  CHECK_TWO_SHOT(planGpuAllReduce(withTuning(call(AllReduceAlgo::kDdaLarge, 64 * kMiB),
                                             "large_blocks=32,large_threads=256,"
                                             "large_chunk_units=1024"))
                     .twoShot,
                 32, 256, 2097152, 1024, 2, 0);
  const GpuAllReducePlan z = planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaLarge, kMiB)));
  CHECK(z.zeroCopy);
  CHECK(!z.registrationPays);
}

TEST_CASE("one rank: a copy, nothing in place, PREMUL_SUM still runs a kernel") {
  GpuPlanInput in = call(AllReduceAlgo::kDdaTree, 4096, 1);
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kCopy);
  CHECK_EQ(planGpuAllReduce(in).why, PlanReason::kOneRankCopy);
  CHECK_EQ(planGpuAllReduce(in).bytes, 4096);
  in.inPlace = true;
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kNone);
  CHECK_EQ(planGpuAllReduce(in).why, PlanReason::kOneRankInPlace);
  in.op = RedOp::kPreMulSum;
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kTwoShot);  // the lines need two ranks
  CHECK_EQ(planGpuAllReduce(in).why, PlanReason::kTreeNoLines);
  in.family = AllReduceAlgo::kDdaFlat;
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kFlatLl);
}

TEST_CASE("pdl: on only where the GPU has it and the tuning asks") {
  GpuPlanInput in = call(AllReduceAlgo::kDdaTree, 64 * kKiB);
  CHECK(planGpuAllReduce(in).pdl);
  in.pdlCapable = false;
  CHECK(!planGpuAllReduce(in).pdl);
  CHECK(!planGpuAllReduce(withTuning(call(AllReduceAlgo::kDdaLarge, kMiB), "pdl=0")).pdl);
}

TEST_CASE("element types: bitwise operators run over bytes; no elements, no kernel") {
  GpuPlanInput in = call(AllReduceAlgo::kDdaFlat, 4000);
  in.type = DataType::kInt32;
  in.op = RedOp::kBitXor;
  const GpuAllReducePlan p = planGpuAllReduce(in);
  CHECK_EQ(p.type, DataType::kUint8);
  CHECK_EQ(p.count, 4000);
  CHECK_EQ(p.bytes, 4000);
  in.count = 0;
  CHECK_EQ(planGpuAllReduce(in).kernel, GpuKernel::kNone);
  CHECK_EQ(planGpuAllReduce(in).why, PlanReason::kNoElements);
  GpuPlanInput ring = call(AllReduceAlgo::kRing, 4096);
  CHECK_EQ(planGpuAllReduce(ring).kernel, GpuKernel::kNone);
  CHECK_EQ(planGpuAllReduce(ring).why, PlanReason::kNotOnGpu);
}

TEST_CASE("describe: the family, the kernel, why and the shape") {
  const std::string d =
      planGpuAllReduce(symmetric(call(AllReduceAlgo::kDdaTree, 8 * kMiB))).describe();
  CHECK_EQ(d,
           "dda_tree: two_shot zero-copy (above tree_lines_max_bytes; 2097152 x float32 = 8388608 "
           "bytes, limit 7864320), 128 x 512 threads, segment 262144 units, chunk 2048 units, "
           "1 slot, 48 first, pdl");
  const std::string f =
      planGpuAllReduce(withLayout(call(AllReduceAlgo::kDdaFlat, 12000), 4096, kStaging, kLines))
          .describe();
  CHECK(f.find("flat_ll") != std::string::npos);
  CHECK(f.find("3 pieces of 1024") != std::string::npos);
  CHECK(f.find("no pdl") != std::string::npos);
}

TEST_CASE("tuning: a spec sets the fields it names and keeps the others") {
  Tuning t;
  t.apply("flat_threads=128,tree_max_blocks=16,,lines_max_blocks=256,tree_stagger_bytes=0,pdl=0");
  CHECK_EQ(t.flatThreads, 128);
  CHECK_EQ(t.treeMaxBlocks, 16);
  CHECK_EQ(t.linesMaxBlocks, 256);
  CHECK_EQ(t.treeStaggerBytes, 0);
  CHECK(!t.pdl);
  CHECK_EQ(t.treeThreads, Tuning().treeThreads);
  CHECK_EQ(t.largeChunkUnits, Tuning().largeChunkUnits);
  // The dump names every field once and reads back as the same values.
  Tuning u;
  u.apply(t.spec());
  CHECK_EQ(u.spec(), t.spec());
  CHECK_EQ(u.flatThreads, 128);
  CHECK(!u.pdl);
  CHECK_EQ(Tuning().spec().find("flat_threads=64,flat_max_blocks=128,"), 0);
  CHECK(Tuning().spec().find(",pdl=1") != std::string::npos);
}

TEST_CASE("tuning: an unknown name lists every known one") {
  std::string names;
  for (const auto& f : kTuningFields) names += std::string(names.empty() ? "" : ", ") + f.name;
  CHECK_THROWS_AS(Tuning().apply("tree_lines=1"), ctran::InvalidArgument,
                  "GPU tuning: unknown name 'tree_lines' (" + names + ")");
  CHECK(names.find("tree_symmetric_min_bytes") != std::string::npos);
  CHECK_THROWS_AS(Tuning().apply("flat_threads"), ctran::InvalidArgument,
                  "'flat_threads' is not name=value");
}

TEST_CASE("tuning: bad values name the field and the rule") {
  const std::string warp = std::to_string(kWarpThreads);
  CHECK_THROWS_AS(Tuning().apply("tree_threads=100"), ctran::InvalidArgument,
                  "tree_threads=100 must be a multiple of " + warp + " up to 512");
  CHECK_THROWS_AS(Tuning().apply("lines_threads=1024"), ctran::InvalidArgument,
                  "lines_threads=1024 must be a multiple of " + warp + " up to 512");
  CHECK_THROWS_AS(Tuning().apply("tree_max_blocks=4096"), ctran::InvalidArgument,
                  "tree_max_blocks=4096 exceeds the 128-block limit");
  CHECK_THROWS_AS(Tuning().apply("lines_max_blocks=300"), ctran::InvalidArgument,
                  "lines_max_blocks=300 exceeds the 256-block limit");
  CHECK_THROWS_AS(Tuning().apply("pdl=2"), ctran::InvalidArgument, "pdl=2 must be 0 or 1");
  CHECK_THROWS_AS(Tuning().apply("tree_lines_max_bytes=-1"), ctran::InvalidArgument,
                  "tree_lines_max_bytes=-1 must be a non-negative integer");
  CHECK_THROWS_AS(Tuning().apply("flat_lines_min_bytes=0"), ctran::InvalidArgument,
                  "flat_lines_min_bytes=0 must be a positive integer");
  CHECK_THROWS_AS(Tuning().apply("large_blocks=12x"), ctran::InvalidArgument,
                  "large_blocks=12x must be a positive integer");
  CHECK_THROWS_AS(Tuning().apply("flat_threads="), ctran::InvalidArgument,
                  "flat_threads= must be a positive integer");
  // Fields before a bad one are applied: a caller that must keep its own applies to a copy
  // (GpuAllReduce::setTuning).
  Tuning t;
  CHECK_THROWS_AS(t.apply("flat_threads=128,pdl=7"), ctran::InvalidArgument, "pdl=7");
  CHECK_EQ(t.flatThreads, 128);
}
