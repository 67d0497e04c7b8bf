// The GPU allreduce's launch-shape tuning (RCCLX_GPU_TUNING, Communicator::setGpuTuning): the
// fields with their defaults, and one table of them (name, kind, where the value lives) that
// parsing, its error messages and the dump all read. Host-only; compiled in every build.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "device/allreduce/launch.hpp"

namespace rcclx::gpu {

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

  /// Applies "name=value,name=value" (names as in kTuningFields); throws InvalidArgument naming
  /// an unknown name (and listing the known ones) or a bad value. Fields not named keep theirs.
  void apply(const std::string& spec);
  /// Every field as "name=value,..." in table order (apply() of it gives these values back).
  std::string spec() const;
};

/// What a tuning value is, and so which values it takes.
enum class TuningKind {
  kThreads,     ///< threads per block: a multiple of kWarpThreads up to kMaxThreads
  kBlocks,      ///< blocks of the LL and two-shot kernels: up to kMaxBlocks
  kLineBlocks,  ///< blocks of the line kernels: up to kMaxLineBlocks
  kSize,        ///< bytes, units or lines: any size
  kBool,        ///< 0 or 1
};

/// One tuning field: its name in specs, its kind, whether 0 is allowed (every kind but kBool
/// otherwise takes positive values only), and the member holding it (the one matching the
/// kind's type: int for threads and blocks, size_t for sizes, bool for kBool).
struct TuningField {
  const char* name;
  TuningKind kind;
  bool zeroAllowed;
  int Tuning::* intMember = nullptr;
  size_t Tuning::* sizeMember = nullptr;
  bool Tuning::* boolMember = nullptr;

  constexpr TuningField(const char* n, TuningKind k, int Tuning::* m)
      : name(n), kind(k), zeroAllowed(false), intMember(m) {}
  constexpr TuningField(const char* n, bool zeroOk, size_t Tuning::* m)
      : name(n), kind(TuningKind::kSize), zeroAllowed(zeroOk), sizeMember(m) {}
  constexpr TuningField(const char* n, bool Tuning::* m)
      : name(n), kind(TuningKind::kBool), zeroAllowed(true), boolMember(m) {}
};

/// Every tuning field, in the order specs, error messages and dumps list them.
inline constexpr std::array<TuningField, 16> kTuningFields = {{
    {"flat_threads", TuningKind::kThreads, &Tuning::flatThreads},
    {"flat_max_blocks", TuningKind::kBlocks, &Tuning::flatMaxBlocks},
    {"flat_lines_min_bytes", false, &Tuning::flatLinesMinBytes},
    {"tree_threads", TuningKind::kThreads, &Tuning::treeThreads},
    {"tree_max_blocks", TuningKind::kBlocks, &Tuning::treeMaxBlocks},
    {"tree_min_block_units", false, &Tuning::treeMinBlockUnits},
    {"lines_threads", TuningKind::kThreads, &Tuning::linesThreads},
    {"lines_max_blocks", TuningKind::kLineBlocks, &Tuning::linesMaxBlocks},
    {"lines_min_warp_lines", false, &Tuning::linesMinWarpLines},
    {"tree_lines_max_bytes", true, &Tuning::treeLinesMaxBytes},
    {"tree_symmetric_min_bytes", true, &Tuning::treeSymmetricMinBytes},
    {"large_threads", TuningKind::kThreads, &Tuning::largeThreads},
    {"large_blocks", TuningKind::kBlocks, &Tuning::largeBlocks},
    {"large_chunk_units", false, &Tuning::largeChunkUnits},
    {"tree_stagger_bytes", true, &Tuning::treeStaggerBytes},
    {"pdl", &Tuning::pdl},
}};

}  // namespace rcclx::gpu
