// The GPU allreduce kernels' host entry points, shared by gpu_allreduce.cpp (which fills the
// arguments) and the .cu files (one algorithm each). No GPU runtime types appear here, so
// host-only translation units can include it.
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
  /// Layout for `nranks` with flat slots of `flatBytes` payload, `rawBytes` of raw staging and
  /// a line region for dda_tree messages up to `linesBytes` (0: none).
  static StagingLayout of(int nranks, size_t flatBytes, size_t rawBytes, size_t linesBytes);
};

/// Launch shapes (tuning; defaults measured on 2 x H200, see docs/gpu.rst).
struct Tuning {
  int flatThreads = 64;
  int flatMaxBlocks = 128;
  int treeThreads = 512;
  int treeMaxBlocks = 128;
  size_t treeMinBlockUnits = 512;  ///< tree (two-shot): at least this many units per block
  /// flat: smallest message carried in 128-byte lines (flat_lines.cu) rather than LL lines,
  /// where it fits the line region.
  size_t flatLinesMinBytes = 256 << 10;
  int linesThreads = 256;        ///< line kernels: threads per block, at most
  int linesMaxBlocks = 256;      ///< line kernels: blocks, at most (two per SM of an H200)
  size_t linesMinWarpLines = 4;  ///< line kernels: at least this many lines per warp and pass
  /// tree: largest message carried in lines (capped by the line region); larger ones two-shot.
  /// On 2 x H200 the lines win up to 7 MiB; past 7.5 MiB (two ranks) every warp of the largest
  /// line grid takes a second batch, and the staggered two-shot wins (29.3 vs 30.6 us at 8 MiB).
  size_t treeLinesMaxBytes = 7680 << 10;
  /// tree: with the output in a symmetric buffer, the smallest message run as the zero-copy
  /// two-shot rather than in lines (measured level at 6 MiB, 0.5 us ahead at 7 MiB).
  size_t treeSymmetricMinBytes = 6 << 20;
  int largeThreads = 512;
  int largeBlocks = 128;
  size_t largeChunkUnits = 4096;  ///< large: units per block, segment and round
  /// Programmatic dependent launch of the allreduce kernels (1) or plain launches (0); used on
  /// GPUs that have it (sm_90 and later) only.
  bool pdl = true;
  /// tree (two-shot, one round): about this many bytes of reduce-scatter go first, pushed by
  /// the first X blocks; the others start once those have issued theirs (0: all at once).
  size_t treeStaggerBytes = 1536 << 10;
  /// Applies "name=value,name=value" (names as the fields, in snake_case); throws
  /// InvalidArgument naming an unknown name or a bad value.
  void apply(const std::string& spec);
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
  Tuning tuning;
  void* stream = nullptr;  ///< cudaStream_t / hipStream_t
  uint64_t timeoutNs = 0;  ///< bound of every in-kernel wait
  bool pdl = false;        ///< launch with programmatic dependent launch (see launchKernel)
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

/// The two-shot kernel's launch shape (see two_shot.cu).
struct TwoShotShape {
  int blocks = 1;
  int threads = 512;
  size_t chunkUnits = 0;  ///< units per block, segment and round
  int slots = 1;          ///< 1 when one round covers the message, else 2
  /// X: blocks [0, X) start at once; block b >= X waits until block (b - X) % X has issued
  /// its reduce-scatter (0: none waits). One round only.
  int staggerBlocks = 0;
};

/// Units in each of the nranks segments of a call (the last may be shorter).
inline size_t twoShotSegmentUnits(const LaunchArgs& a) {
  const size_t per = kUnitBytes / dataTypeSize(a.type);
  const size_t units = (a.count + per - 1) / per;
  const size_t n = static_cast<size_t>(a.window.nranks);
  return (units + n - 1) / n;
}

/// Most chunk units per block that `blocks` blocks with `slots` slots fit into the raw staging.
inline size_t twoShotMaxChunkUnits(const LaunchArgs& a, int blocks, int slots) {
  const size_t perUnit = kUnitBytes * 2 * static_cast<size_t>(a.window.nranks);
  return a.layout.rawBytes / (perUnit * static_cast<size_t>(blocks) * static_cast<size_t>(slots));
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

/// One-shot push with LL lines: count must fit the flat slot (the caller splits larger calls).
void launchDdaFlat(const LaunchArgs& args);
/// Whether a dda_flat call runs in 128-byte lines: two ranks or more, at least
/// flatLinesMinBytes, its lines from every source fit the line region, and the build has lines
/// (NVIDIA only).
bool flatLinesFit(const LaunchArgs& args);
/// One-shot push in 128-byte lines with in-line flags (flat_lines.cu).
void launchFlatLines(const LaunchArgs& args);
/// Runs the two-shot kernel with `shape`; `what` names the algorithm in errors.
void launchTwoShot(const LaunchArgs& args, const TwoShotShape& shape, const char* what);
/// Two-shot push (reduce-scatter then all-gather) with few blocks; latency-oriented. Runs the
/// line protocol (launchTreeLines) when treeLinesFit(), else the two-shot kernel.
void launchDdaTree(const LaunchArgs& args);
/// Whether the call can run as lines: two ranks or more, it fits the line region and tuning,
/// and the build has them (NVIDIA only: they rely on a 128-byte warp store arriving whole over
/// NVLink).
bool treeLinesFit(const LaunchArgs& args);
/// Whether a dda_tree call would gain from the zero-copy two-shot: the message is at least
/// treeSymmetricMinBytes or does not fit the lines (smaller ones keep the lines where they fit).
bool treeZeroCopyPays(const LaunchArgs& args);
/// Whether a dda_tree call runs the zero-copy two-shot: its output is in a symmetric buffer
/// (peerRecv set) and treeZeroCopyPays.
bool treeZeroCopy(const LaunchArgs& args);
/// Reduce-scatter then all-gather in 128-byte lines with in-line flags (tree_lines.cu).
void launchTreeLines(const LaunchArgs& args);
/// Grid of a line kernel that moves `lines` lines per pass: one warp per linesMinWarpLines
/// lines, spread over up to linesMaxBlocks blocks of up to linesThreads threads.
struct LinesGrid {
  int blocks = 1;
  int threads = 32;
};
LinesGrid linesGrid(size_t lines, const Tuning& tuning);
/// Two-shot push with many blocks, pipelined through the staging in rounds; bandwidth-oriented.
void launchDdaLarge(const LaunchArgs& args);

}  // namespace rcclx::gpu
