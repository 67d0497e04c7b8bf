// rcclx_core/src/device/co_residency.hpp and its use by the launch plans: how ranks sharing a
// GPU agree on how many blocks each launch may have, and what the plans then launch. Computed
// on the host: no GPU needed. The occupancies are those of an H200 (132 SMs; the allreduce
// kernels are register-bound at 512 threads per SM, the channel kernels at 1024).
#include <string>
#include <vector>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "device/allreduce/plan.hpp"
#include "device/co_residency.hpp"
#include "device/collectives/channel_plan.hpp"

using rcclx::AllReduceAlgo;
using rcclx::DataType;
using rcclx::RedOp;
using rcclx::gpu::ChannelBlocks;
using rcclx::gpu::CoResidency;
using rcclx::gpu::GpuAllReducePlan;
using rcclx::gpu::GpuKernel;
using rcclx::gpu::GpuPlanInput;
using rcclx::gpu::GpuShareReport;
using rcclx::gpu::StagingLayout;
using rcclx::gpu::WaitingKernel;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

/// A rank's report from GPU `gpu` of an H200.
GpuShareReport h200(const std::string& gpu, int mpsPercent = 0) {
  GpuShareReport r;
  r.gpu = gpu;
  r.sms = 132;
  r.mpsThreadPercent = mpsPercent;
  r.threadsPerSm = {1024, 512, 512, 1024, 1024, 1024};
  return r;
}

CoResidency ranksOn(const std::vector<std::string>& gpus) {
  std::vector<GpuShareReport> reports;
  for (const std::string& g : gpus) reports.push_back(h200(g));
  return CoResidency::agree(reports);
}

/// Ranks under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=`percent`, each seeing `sms` SMs.
CoResidency ranksOnShare(const std::vector<std::string>& gpus, int percent, int sms) {
  std::vector<GpuShareReport> reports;
  for (const std::string& g : gpus) {
    reports.push_back(h200(g, percent));
    reports.back().sms = sms;
  }
  return CoResidency::agree(reports);
}

GpuPlanInput call(AllReduceAlgo family, size_t bytes, int nranks, const CoResidency& c) {
  GpuPlanInput in;
  in.family = family;
  in.count = bytes / 4;
  in.type = DataType::kFloat32;
  in.op = RedOp::kSum;
  in.nranks = nranks;
  in.linesAvailable = true;
  in.pdlCapable = true;
  in.layout = StagingLayout::of(nranks, 1 * kMiB, 64 * kMiB, 8 * kMiB);
  in.coResidency = c;
  return in;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("co-residency: ranks on GPUs of their own are not limited") {
  const CoResidency c = ranksOn({"0000:01:00.0", "0000:02:00.0"});
  CHECK_EQ(c.ranksPerGpu(), 1);
  CHECK(!c.shared());
  CHECK_EQ(c.maxBlocks(WaitingKernel::kTwoShot, 512), CoResidency::kNoLimit);
  CHECK_EQ(c.fit(WaitingKernel::kLines, 256, 256), 256);
  CHECK_EQ(c.describe(), std::string("one rank per GPU"));
  CHECK(!CoResidency().shared());
}

TEST_CASE("co-residency: the most ranks on one GPU count, on every rank alike") {
  CHECK_EQ(ranksOn({"a", "a"}).ranksPerGpu(), 2);
  CHECK_EQ(ranksOn({"a", "b", "a", "b"}).ranksPerGpu(), 2);
  CHECK_EQ(ranksOn({"a", "a", "a", "b"}).ranksPerGpu(), 3);
  // Rank b alone on its GPU still launches as the sharers do: block i meets block i.
  const CoResidency c = ranksOn({"a", "a", "b"});
  CHECK_EQ(c.maxBlocks(WaitingKernel::kTwoShot, 512), 66);
}

TEST_CASE("co-residency: the SMs divided among the sharers, and no more than MPS allows") {
  CHECK_EQ(ranksOn({"a", "a"}).smsPerRank(), 66);
  CHECK_EQ(ranksOn({"a", "a", "a"}).smsPerRank(), 44);
  // Under an MPS percentage each process sees that share of the 132 SMs (66 at 50 %, as an
  // H200 reports it): two ranks at 50 % have theirs apart, three overlap.
  CHECK_EQ(ranksOnShare({"a", "a"}, 50, 66).smsPerRank(), 66);
  CHECK_EQ(ranksOnShare({"a", "a"}, 25, 33).smsPerRank(), 33);
  CHECK_EQ(ranksOnShare({"a", "a", "a"}, 50, 66).smsPerRank(), 44);
  CHECK_EQ(ranksOnShare({"a", "a", "a"}, 33, 44).smsPerRank(), 44);
  // The smallest percentage any rank runs with, with the SMs it sees.
  std::vector<GpuShareReport> mixed = {h200("a", 0), h200("a", 30), h200("a", 60)};
  mixed[1].sms = 40;
  mixed[2].sms = 80;
  CHECK_EQ(CoResidency::agree(mixed).smsPerRank(), 40);
  // The fewest SMs any rank sees, and the lowest occupancy.
  mixed = {h200("a"), h200("a")};
  mixed[1].sms = 100;
  mixed[1].threadsPerSm[static_cast<int>(WaitingKernel::kTwoShot)] = 256;
  const CoResidency c = CoResidency::agree(mixed);
  CHECK_EQ(c.smsPerRank(), 50);
  CHECK_EQ(c.maxBlocks(WaitingKernel::kTwoShot, 256), 50);
  CHECK_EQ(c.maxBlocks(WaitingKernel::kTwoShot, 512), 50);  // at least one block per SM
}

TEST_CASE("co-residency: blocks per launch from the threads one SM holds") {
  const CoResidency c = ranksOn({"a", "a"});
  CHECK_EQ(c.maxBlocks(WaitingKernel::kTwoShot, 512), 66);
  CHECK_EQ(c.maxBlocks(WaitingKernel::kLines, 256), 132);
  CHECK_EQ(c.maxBlocks(WaitingKernel::kFlatLl, 64), 16 * 66);
  CHECK_EQ(c.fit(WaitingKernel::kTwoShot, 32, 512), 32);
  CHECK_EQ(c.fit(WaitingKernel::kTwoShot, 128, 512), 66);
  CHECK(contains(c.describe(), "2 ranks share a GPU of 132 SMs: 66 SMs per rank"));
  CHECK(contains(ranksOnShare({"a", "a"}, 50, 66).describe(),
                 "each process sees 66 SMs under CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"));
}

TEST_CASE("co-residency: early launch only where no rank can take a peer's SMs") {
  CHECK(CoResidency().earlyLaunchSafe());
  CHECK(ranksOn({"a", "b"}).earlyLaunchSafe());
  CHECK(!ranksOn({"a", "a"}).earlyLaunchSafe());                    // no SM limit
  CHECK(ranksOnShare({"a", "a"}, 50, 66).earlyLaunchSafe());        // MPS splits the SMs
  CHECK(!ranksOnShare({"a", "a", "a"}, 50, 66).earlyLaunchSafe());  // 150 %: they overlap
  CHECK(ranksOnShare({"a", "a", "a"}, 33, 44).earlyLaunchSafe());
  CHECK(contains(ranksOn({"a", "a"}).describe(),
                 "early launch one kernel ahead where two grids fit"));
  // One kernel ahead: the running grid and the next, resident together, within a rank's share
  // (66 two-shot blocks of 512 threads for each of two ranks; 44 for three).
  CHECK(CoResidency().earlyLaunchFits(WaitingKernel::kTwoShot, 1 << 20, 512));
  CHECK(ranksOn({"a", "a"}).earlyLaunchFits(WaitingKernel::kTwoShot, 33, 512));
  CHECK(!ranksOn({"a", "a"}).earlyLaunchFits(WaitingKernel::kTwoShot, 34, 512));
  CHECK(ranksOn({"a", "a", "a"}).earlyLaunchFits(WaitingKernel::kTwoShot, 22, 512));
  CHECK(!ranksOn({"a", "a", "a"}).earlyLaunchFits(WaitingKernel::kTwoShot, 23, 512));
  CHECK(ranksOn({"a", "a"}).earlyLaunchFits(WaitingKernel::kFlatLl, 8 * 66, 64));
  // Where MPS splits the SMs, early launch is as on a GPU of its own, whatever the grid.
  GpuAllReducePlan p =
      planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 2, ranksOnShare({"a", "a"}, 50, 66)));
  CHECK(p.pdl && !p.pdlOneAhead);
  p = planGpuAllReduce(
      call(AllReduceAlgo::kDdaLarge, 64 * kMiB, 2, ranksOnShare({"a", "a"}, 50, 66)));
  CHECK(p.pdl && !p.pdlOneAhead && p.twoShot.blocks == 66);
  CHECK(contains(p.describe(), ", pdl"));
}

TEST_CASE("co-residency: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE as MPS reads it") {
  using rcclx::gpu::mpsThreadPercent;
  CHECK_EQ(mpsThreadPercent(nullptr), 0);
  CHECK_EQ(mpsThreadPercent(""), 0);
  CHECK_EQ(mpsThreadPercent("50"), 50);
  CHECK_EQ(mpsThreadPercent("12.5"), 12);
  CHECK_EQ(mpsThreadPercent("0.5"), 1);
  CHECK_EQ(mpsThreadPercent("100"), 100);
  CHECK_EQ(mpsThreadPercent("0"), 0);
  CHECK_EQ(mpsThreadPercent("150"), 0);
  CHECK_EQ(mpsThreadPercent("half"), 0);
}

TEST_CASE("co-residency: a report travels between ranks whole") {
  GpuShareReport r = h200("0000:1b:00.0", 33);
  r.threadsPerSm = {1, 2, 3, 4, 5, 6};
  const GpuShareReport back = GpuShareReport::parse(r.serialize(), 3);
  CHECK_EQ(back.gpu, r.gpu);
  CHECK_EQ(back.sms, 132);
  CHECK_EQ(back.mpsThreadPercent, 33);
  CHECK(back.threadsPerSm == r.threadsPerSm);
  const std::string junk = "x";
  CHECK_THROWS_AS(GpuShareReport::parse(ctran::Bytes(junk.begin(), junk.end()), 3),
                  ctran::InvalidArgument, "rank 3 sent no report");
}

TEST_CASE(
    "allreduce plan: ranks sharing a GPU fit their grids beside the peers'; early launch "
    "one kernel ahead where two fit") {
  const CoResidency alone;
  const CoResidency two = ranksOn({"a", "a"});
  const CoResidency three = ranksOn({"a", "a", "a"});
  // dda_large's fixed grid of 128 blocks of 512 threads: one per SM, so 66 each for two ranks.
  GpuAllReducePlan p = planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, 64 * kMiB, 2, two));
  CHECK_EQ(p.kernel, GpuKernel::kTwoShot);
  CHECK_EQ(p.twoShot.blocks, 66);
  CHECK(!p.pdl);
  CHECK_EQ(p.unsharedBlocks, 128);
  CHECK(contains(p.describe(), "shrunk from 128 blocks"));
  CHECK(contains(p.describe(), "no pdl (ranks share the GPU)"));
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, 64 * kMiB, 3, three));
  CHECK_EQ(p.twoShot.blocks, 44);
  // dda_tree's two-shot past the lines: the same bound.
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 32 * kMiB, 2, two));
  CHECK_EQ(p.kernel, GpuKernel::kTwoShot);
  CHECK_EQ(p.twoShot.blocks, 66);
  // The line kernels hold two blocks of 256 threads per SM.
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 7 * kMiB, 2, two));
  CHECK_EQ(p.kernel, GpuKernel::kTreeLines);
  CHECK(p.shape.blocks <= 132);
  CHECK_EQ(p.unsharedBlocks, 256);
  // A small call fits as it is, twice over: it launches early, one kernel ahead.
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 2, two));
  const GpuAllReducePlan own = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 2, alone));
  CHECK_EQ(p.shape.blocks, own.shape.blocks);
  CHECK_EQ(p.unsharedBlocks, 0);
  CHECK(own.pdl && !own.pdlOneAhead);
  CHECK(p.pdl && p.pdlOneAhead);
  CHECK(!contains(p.describe(), "shrunk"));
  CHECK(contains(p.describe(), "pdl one kernel ahead (ranks share the GPU)"));
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 3, three));
  CHECK(p.pdl && p.pdlOneAhead);
  // A grid that takes more than half a rank's share launches plainly.
  p = planGpuAllReduce(call(AllReduceAlgo::kDdaTree, 7 * kMiB, 2, two));
  CHECK(p.shape.blocks > 66);
  CHECK(!p.pdl && !p.pdlOneAhead);
  // Turned off by the tuning, early launch stays off.
  GpuPlanInput off = call(AllReduceAlgo::kDdaFlat, 1024, 2, two);
  off.tuning.pdl = false;
  CHECK(!planGpuAllReduce(off).pdl);
}

TEST_CASE("allreduce plan: a GPU of its own plans as before, whatever the size") {
  // Two ranks on two GPUs agree they share nothing: every plan equals the default input's.
  const CoResidency own = ranksOn({"a", "b"});
  for (AllReduceAlgo family :
       {AllReduceAlgo::kDdaFlat, AllReduceAlgo::kDdaTree, AllReduceAlgo::kDdaLarge}) {
    for (size_t bytes = 1024; bytes <= 256 * kMiB; bytes *= 4) {
      GpuPlanInput in = call(family, bytes, 2, own);
      const std::string agreed = planGpuAllReduce(in).describe();
      in.coResidency = CoResidency();
      CHECK_EQ(agreed, planGpuAllReduce(in).describe());
      CHECK(!contains(agreed, "share"));
    }
  }
}

TEST_CASE("channel plan: the collectives' blocks fit beside the peers' when ranks share a GPU") {
  using rcclx::gpu::channelBlocks;
  using rcclx::gpu::laneShape;
  const ChannelBlocks own = channelBlocks(CoResidency());
  CHECK_EQ(own.transfers, rcclx::gpu::kChannelBlockBudget);
  CHECK_EQ(own.self, rcclx::gpu::kMaxSelfBlocks);
  // Two blocks of 512 threads per SM, 66 SMs each: 132 blocks, a fifth for the self copy.
  const ChannelBlocks two = channelBlocks(ranksOn({"a", "a"}));
  CHECK_EQ(two.self, 26);
  CHECK_EQ(two.transfers, 106);
  const ChannelBlocks three = channelBlocks(ranksOn({"a", "a", "a"}));
  CHECK_EQ(three.self + three.transfers, 88);
  // A 64 MiB transfer between two ranks: as many lanes as the budget gives each direction.
  CHECK_EQ(laneShape(64 * kMiB, false, 2, 1 * kMiB).lanes, 64);
  CHECK_EQ(laneShape(64 * kMiB, false, 2, 1 * kMiB, two.transfers).lanes, 53);
  CHECK_EQ(laneShape(64 * kMiB, false, 3, 1 * kMiB, three.transfers).lanes, 17);
}

TEST_CASE(
    "co-residency: launches keep the SMs' shared memory free where a peer's blocks can "
    "sit on every SM") {
  // A peer's waiting blocks on every SM must leave room for this rank's own kernels before its
  // collective (ctran/kernel_launch.cuh); on a GPU of its own, or where MPS splits the SMs
  // among the sharers, nothing changes.
  using rcclx::gpu::channelBlocks;
  CHECK(contains(ranksOn({"a", "a"}).describe(), "shared memory kept free"));
  CHECK(!channelBlocks(CoResidency()).keepSharedMemoryFree);
  CHECK(!channelBlocks(ranksOn({"a", "b"})).keepSharedMemoryFree);
  CHECK(channelBlocks(ranksOn({"a", "a", "a"})).keepSharedMemoryFree);
  // Under MPS percentages whose shares overlap the launch still keeps it free.
  const ChannelBlocks fits = channelBlocks(ranksOnShare({"a", "a"}, 100, 132));
  CHECK(fits.keepSharedMemoryFree);
  CHECK(channelBlocks(ranksOnShare({"a", "a", "a"}, 50, 66)).keepSharedMemoryFree);
  rcclx::gpu::PlanBuilder builder(ctran::DeviceWindowHandle{}, rcclx::gpu::ChannelLayout{},
                                  ctran::WaitBound{}, fits);
  CHECK(builder.finish().keepSharedMemoryFree);
  // Split by MPS (2 x 50 %, 3 x 33 %): each rank's blocks stay on its share of the SMs.
  const CoResidency split = ranksOnShare({"a", "a"}, 50, 66);
  CHECK(split.smsSplit() && !split.keepSharedMemoryFree());
  CHECK(!channelBlocks(split).keepSharedMemoryFree);
  CHECK(!channelBlocks(ranksOnShare({"a", "a", "a"}, 33, 44)).keepSharedMemoryFree);
  CHECK(!contains(split.describe(), "shared memory kept free"));
  CHECK(!ranksOn({"a", "a"}).smsSplit() && !CoResidency().smsSplit());
  const GpuAllReducePlan shared =
      planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 2, ranksOn({"a", "a"})));
  CHECK(shared.sharedGpu && shared.keepSharedMemoryFree);
  const GpuAllReducePlan apart =
      planGpuAllReduce(call(AllReduceAlgo::kDdaLarge, 64 * kMiB, 2, split));
  CHECK(apart.sharedGpu && !apart.keepSharedMemoryFree);
  CHECK(!planGpuAllReduce(call(AllReduceAlgo::kDdaFlat, 1024, 2, ranksOn({"a", "b"})))
             .keepSharedMemoryFree);
}
