// Co-residency: how many thread blocks one launch of a kernel that waits on peers may have, so
// that the kernels of all ranks sharing a GPU can be resident at the same time.
//
// A kernel that waits on a peer makes progress only while the peer's kernel runs. Ranks on GPUs
// of their own always have that. Ranks sharing a GPU run their kernels side by side under MPS
// (or in time slices without it): there one rank's grid can take every SM, and a peer's kernel
// that cannot get one leaves both waiting until the in-kernel timeout. So when ranks share a GPU
// each launch is sized to its share: the kernel's occupancy (the threads one SM holds, from the
// occupancy API; the kernels are register-bound, so that holds for any block size) divided by
// the launch's block size, times the SMs a rank can count on (the GPU's SMs divided among the ranks
// sharing it, and no more than CUDA_MPS_ACTIVE_THREAD_PERCENTAGE lets one process use).
// Programmatic dependent launch needs care there: an early-launched kernel's blocks sit resident
// while they wait for their predecessor, and where each kernel lets its successor be scheduled
// before it waits itself, a stream's queue becomes a chain of resident kernels that can fill
// every SM a process may use before a peer's kernel starts. Where the MPS percentage splits the
// SMs among the sharers that chain stays in the rank's own share, and kernels launch early as on
// a GPU of their own. Elsewhere a kernel lets its successor be scheduled only once it has waited
// for its predecessor ("one kernel ahead"): a rank then has at most two grids resident, and a
// launch is early only when two of its grids fit the rank's share. There too, the peers'
// waiting blocks can sit on every SM, so launches keep the SMs' shared memory free
// (ctran/kernel_launch.cuh); where MPS splits the SMs they need not.
//
// Every rank reports its GPU and occupancies; agree() makes one answer of them that every rank
// computes alike (launch shapes must match across ranks). Host-only; unit-tested on the CPU.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "ctran/store.hpp"

namespace rcclx::gpu {

/// The kernels that wait on peers, each with its own occupancy.
enum class WaitingKernel : int {
  kFlatLl = 0,        ///< allreduce_flat_ll.cu
  kLines,             ///< allreduce_flat_lines.cu and allreduce_tree_lines.cu (the lower)
  kTwoShot,           ///< allreduce_two_shot.cu
  kChannels,          ///< copy_blocks.cu and reduce_blocks.cu (the lower)
  kLowPrecision,      ///< lp_gpu_all_reduce.cu and lp_gpu_exchange.cu (the lower)
  kAllToAllvDynamic,  ///< alltoallv_dynamic.cu
};
constexpr int kWaitingKernels = 6;

/// "flat_ll", "lines", "two_shot", "channels", "low_precision", "alltoallv_dynamic".
const char* waitingKernelName(WaitingKernel kernel);

/// What one rank knows about its GPU, sent to every other rank.
struct GpuShareReport {
  std::string gpu;  ///< the GPU's PCI bus id: ranks with the same one share it
  /// Its multiprocessors as this process sees them: under an MPS percentage, that share of
  /// the GPU's (66 of an H200's 132 at 50 %).
  int sms = 0;
  /// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of this process (1..100), 0 when unset.
  int mpsThreadPercent = 0;
  /// Threads of each WaitingKernel one SM holds at once (the occupancy API); 0 unknown.
  std::array<int, kWaitingKernels> threadsPerSm{};

  ctran::Bytes serialize() const;
  /// Throws InvalidArgument naming `rank` when `bytes` is not a report.
  static GpuShareReport parse(const ctran::Bytes& bytes, int rank);
};

/// The value of CUDA_MPS_ACTIVE_THREAD_PERCENTAGE as a percentage (1..100), 0 when unset or not
/// a number in that range (MPS itself then ignores it).
int mpsThreadPercent(const char* value);

/// How the ranks of one communicator share GPUs, the same on every rank.
class CoResidency {
 public:
  /// Ranks on GPUs of their own: no launch is limited.
  CoResidency() = default;
  /// From every rank's report (index = rank): the most ranks on any one GPU, the fewest SMs,
  /// the smallest MPS percentage and the lowest occupancy of each kernel.
  static CoResidency agree(const std::vector<GpuShareReport>& reports);

  /// Most ranks of the communicator on one GPU (1: every rank has its own).
  int ranksPerGpu() const { return ranksPerGpu_; }
  bool shared() const { return ranksPerGpu_ > 1; }
  /// SMs a rank's kernel can count on while every rank sharing its GPU runs one: the SMs it
  /// sees, and no more than the whole GPU's divided among the ranks sharing it.
  int smsPerRank() const;
  /// Whether the MPS percentage splits the SMs among the ranks sharing a GPU (percentage x
  /// ranks <= 100): no rank's blocks can then be on more SMs than its share, and the others
  /// always find SMs without them.
  bool smsSplit() const;
  /// Whether launches ask for the SMs' largest shared-memory share (ctran/kernel_launch.cuh):
  /// where ranks share a GPU whose SMs MPS does not split, a peer's waiting blocks can sit on
  /// every SM, and an SM set up for them cannot start a kernel that needs shared memory.
  bool keepSharedMemoryFree() const { return shared() && !smsSplit(); }
  /// Whether kernels may launch early (programmatic dependent launch) with no bound on how
  /// many of a stream's kernels sit resident: no rank's blocks can then take the SMs a peer
  /// needs. True for ranks on GPUs of their own, and where the MPS percentage splits the SMs
  /// among the sharers (percentage x ranks <= 100).
  bool earlyLaunchSafe() const;
  /// Whether a launch of `blocks` blocks of `threads` threads may launch early one kernel ahead
  /// (its successor scheduled only once it has waited for its predecessor): two such grids, the
  /// running one and the next, fit the SMs a rank counts on. Always true on a GPU of its own.
  bool earlyLaunchFits(WaitingKernel kernel, int blocks, int threads) const;
  /// Most blocks of `threads` threads one launch of `kernel` may have (at least one per SM a
  /// rank counts on); kNoLimit when the GPU is not shared.
  int maxBlocks(WaitingKernel kernel, int threads) const;
  /// `wanted` blocks, or fewer when the GPU is shared and they would not fit beside the peers'.
  int fit(WaitingKernel kernel, int wanted, int threads) const;
  /// One line: "one rank per GPU", or the sharing, the SMs per rank and why.
  std::string describe() const;

  static constexpr int kNoLimit = 1 << 30;

 private:
  int ranksPerGpu_ = 1;
  int sms_ = 0;
  int mpsThreadPercent_ = 0;
  std::array<int, kWaitingKernels> threadsPerSm_{};
};

}  // namespace rcclx::gpu
