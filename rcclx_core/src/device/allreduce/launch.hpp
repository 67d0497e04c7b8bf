// The GPU allreduce kernels' host entry points, shared by gpu_allreduce.cpp (which fills the
// arguments from a plan, plan.hpp) and the .cu files (one kernel each): the staging layout the
// host and the kernels agree on, the launch shapes, and one launcher per kernel. Launchers
// launch what they are given and decide nothing. No GPU runtime types appear here, so host-only
// translation units can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ctran/device_window.hpp"
#include "rcclx/types.hpp"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RCCLX_HOST_DEVICE __host__ __device__
#else
#define RCCLX_HOST_DEVICE
#endif

namespace rcclx::gpu {

/// Threads per warp (wavefront on AMD) of the GPUs the build targets, as ctran::kWarpSize,
/// known here without the GPU runtime so host-only code sizes launches alike (a build without
/// GPU code sizes them as for NVIDIA). Launches take whole warps.
#if defined(RCCLX_HAVE_HIP) || defined(__HIP_PLATFORM_AMD__)
constexpr int kWarpThreads = 64;
#else
constexpr int kWarpThreads = 32;
#endif
/// Most thread blocks any GPU allreduce kernel launches (flags are laid out for this many).
constexpr int kMaxBlocks = 128;
static_assert(kMaxBlocks <= ctran::kMaxEpochSlots, "every block needs an epoch slot");
/// Most blocks of the line kernels (tree_lines.cu, flat_lines.cu), which have no per-block
/// flags: one epoch slot each.
constexpr int kMaxLineBlocks = ctran::kMaxEpochSlots;
/// Most threads per block of any GPU allreduce kernel (their __launch_bounds__).
constexpr int kMaxThreads = 512;
/// The unit of staging, vector loads and stores: 16 bytes.
constexpr size_t kUnitBytes = 16;
/// An LL (low-latency) line carries 8 payload bytes and two copies of a 32-bit flag in 16 bytes,
/// so a 16-byte unit takes two lines.
constexpr size_t kLlBytesPerUnit = 32;

/// The line protocol (lines.cuh): 128-byte lines of 16 words of 8 bytes, the last
/// word the flag; eight threads store a line with one warp-wide 16-byte store each.
constexpr size_t kLineBytes = 128;
constexpr size_t kLinePayloadWords = 15;
constexpr size_t kWordBytes = 8;

/// Lines of the largest of nranks segments of a `bytes`-byte message in the line protocol.
RCCLX_HOST_DEVICE inline constexpr size_t linesPerSegment(size_t bytes, int nranks) {
  const size_t words = (bytes + kWordBytes - 1) / kWordBytes;
  const size_t segWords = (words + static_cast<size_t>(nranks) - 1) / static_cast<size_t>(nranks);
  return (segWords + kLinePayloadWords - 1) / kLinePayloadWords;
}
/// Lines of a whole `bytes`-byte message (dda_flat's lines: one source's slot).
inline constexpr size_t messageLines(size_t bytes) { return linesPerSegment(bytes, 1); }

/// Phases of the two-shot algorithms, as indices into the signal layout.
enum Phase : int { kReduceScatter = 0, kAllGather = 1 };

/// Signal flags: one per (parity half, phase, source rank, block, round slot).
constexpr int kNumSignals = 2 * 2 * ctran::kMaxDeviceRanks * kMaxBlocks * 2;
/// Index of a flag in a rank's signal area (host and device agree on it).
RCCLX_HOST_DEVICE inline constexpr int signalIndex(int half, int phase, int src, int block,
                                                   int slot) {
  return (((half * 2 + phase) * ctran::kMaxDeviceRanks + src) * kMaxBlocks + block) * 2 + slot;
}

/// Where things live in every rank's DeviceWindow data area. Kernels with epoch e use half
/// e % 2 only, so back-to-back calls need no barrier between them: a rank starts call e+2
/// only after every peer has finished call e.
struct StagingLayout {
  size_t halfBytes = 0;    ///< bytes per parity half
  size_t llOffset = 0;     ///< LL region, in each half: one slot per source rank
  size_t llSlotBytes = 0;  ///< bytes of one LL slot (kLlBytesPerUnit per unit)
  size_t rawOffset = 0;    ///< raw region of the two-shot algorithms, in each half
  size_t rawBytes = 0;
  /// Line region, in each half: dda_tree's 2 phases x nranks source slots of linesSlotBytes;
  /// dda_flat's nranks source slots of a whole message's lines (up to 2 x linesSlotBytes) over
  /// the same bytes. Only line kernels write it, so a stale word never looks like a current flag.
  size_t linesOffset = 0;
  size_t linesSlotBytes = 0;
  size_t linesMaxBytes = 0;  ///< the largest message that fits (0: no line region)
  size_t totalBytes() const { return 2 * halfBytes; }
  /// Payload bytes one flat LL kernel handles (larger dda_flat calls run in pieces).
  size_t flatPayloadBytes() const { return llSlotBytes / kLlBytesPerUnit * kUnitBytes; }
  /// Layout for `nranks` with flat slots of `flatBytes` payload, `rawBytes` of raw staging and
  /// a line region for dda_tree messages up to `linesBytes` (0: none). Defined in tuning.cpp.
  static StagingLayout of(int nranks, size_t flatBytes, size_t rawBytes, size_t linesBytes);
};

/// One allreduce, as the launchers receive it.
struct LaunchArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  ///< elements (> 0)
  DataType type = DataType::kFloat32;
  RedOp op = RedOp::kSum;  ///< any operator gpuSupports() accepts for the call's type
  /// PREMUL_SUM: this rank's scalar (ignored for other operators).
  double premulScalar = 1.0;
  ctran::DeviceWindowHandle window;
  StagingLayout layout;
  void* stream = nullptr;    ///< cudaStream_t / hipStream_t
  ctran::WaitBound bound;    ///< bound of every in-kernel wait
  bool pdl = false;          ///< launch with programmatic dependent launch (kernel_launch.cuh)
  bool pdlOneAhead = false;  ///< with pdl: one kernel ahead (GpuAllReducePlan::pdlOneAhead)
  /// Peers' waiting blocks may sit on every SM: keep their shared memory free
  /// (ctran/kernel_launch.cuh).
  bool keepSharedMemoryFree = false;
  /// When recv lies in a symmetric buffer: every rank's output at the same offset, as mapped
  /// here (the two-shot kernel then stores its all-gather straight into the peers' outputs);
  /// all null otherwise.
  char* peerRecv[ctran::kMaxDeviceRanks] = {};
  bool symmetricOutput() const { return peerRecv[window.rank] != nullptr; }
};

/// Whether every rank's output (outputs[r], as mapped here) sits at the same place modulo
/// kUnitBytes as every other: a rank stores 16-byte units into the peers' outputs when its own
/// buffers are 16-byte aligned, so zero-copy needs them alike (every rank sees the same).
inline bool outputsAlike(char* const* outputs, int nranks) {
  for (int r = 1; r < nranks; ++r) {
    if (reinterpret_cast<uintptr_t>(outputs[r]) % kUnitBytes !=
        reinterpret_cast<uintptr_t>(outputs[0]) % kUnitBytes)
      return false;
  }
  return true;
}

/// Grid of a kernel without further shape: the flat LL kernel and the line kernels.
struct LaunchShape {
  int blocks = 1;
  int threads = 32;
};

/// The two-shot kernel's launch shape (see two_shot.cu).
struct TwoShotShape {
  int blocks = 1;
  int threads = 512;
  size_t segUnits = 0;    ///< units in each of the nranks segments (the last may be shorter)
  size_t chunkUnits = 0;  ///< units per block, segment and round
  int slots = 1;          ///< 1 when one round covers the message, else 2
  /// X: blocks [0, X) start at once; block b >= X waits until block (b - X) % X has issued
  /// its reduce-scatter (0: none waits). One round only.
  int staggerBlocks = 0;
};

/// Most chunk units per block that `blocks` blocks with `slots` slots fit into `rawBytes` of
/// two-shot staging for `nranks` ranks.
inline size_t twoShotMaxChunkUnits(size_t rawBytes, int nranks, int blocks, int slots) {
  const size_t perUnit = kUnitBytes * 2 * static_cast<size_t>(nranks);
  return rawBytes / (perUnit * static_cast<size_t>(blocks) * static_cast<size_t>(slots));
}

/// Element types and operators the GPU kernels implement; false with the reason otherwise.
bool gpuSupports(DataType type, RedOp op, std::string* why);

/// The element type the kernels run a call of (type, op) as: bitwise operators give the same
/// bits whatever the integer width, so every integer type runs them as uint8 over its bytes
/// (one instantiation per operator instead of one per type and operator); otherwise `type`.
inline DataType kernelType(DataType type, RedOp op) {
  const bool bitwise = op == RedOp::kBitAnd || op == RedOp::kBitOr || op == RedOp::kBitXor;
  return bitwise ? DataType::kUint8 : type;
}

/// One-shot push with LL lines (allreduce_flat_ll.cu): count must fit the flat slot (the plan
/// splits larger calls into pieces).
void launchFlatLl(const LaunchArgs& args, const LaunchShape& shape);
/// One-shot push in 128-byte lines with in-line flags (allreduce_flat_lines.cu): the message's
/// lines from every source must fit the line region.
void launchFlatLines(const LaunchArgs& args, const LaunchShape& shape);
/// Reduce-scatter then all-gather in 128-byte lines with in-line flags
/// (allreduce_tree_lines.cu): a segment's lines must fit a line slot.
void launchTreeLines(const LaunchArgs& args, const LaunchShape& shape);
/// The two-shot kernel (allreduce_two_shot.cu) with `shape`; `zeroCopy` stores the all-gather
/// into args.peerRecv (which must be set). `what` names the algorithm in errors.
void launchTwoShot(const LaunchArgs& args, const TwoShotShape& shape, bool zeroCopy,
                   const char* what);

/// Threads of each kernel one SM holds at once (the occupancy API at kMaxThreads per block),
/// for co_residency.hpp; defined with the kernels, so in builds with GPU code only.
int flatLlThreadsPerSm();
int flatLinesThreadsPerSm();
int treeLinesThreadsPerSm();
int twoShotThreadsPerSm();

}  // namespace rcclx::gpu
