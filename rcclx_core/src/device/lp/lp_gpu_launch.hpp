// The GPU low-precision kernels' host entry points and their arguments, shared by
// gpu_low_precision.cpp (which fills them) and the .cu files (one algorithm each). No GPU
// runtime types appear here, so host-only translation units include it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/device_window.hpp"
#include "lp/lp_wire_format.hpp"

namespace rcclx::lp {

/// Where a call's chunks live in every rank's staging half: per (grid block, round slot,
/// phase, source rank) one chunk of `chunkBlocks` quantizer blocks (lp_device.cuh's layout;
/// the shape comes from rcclx/lp_gpu_shape.hpp).
struct LpStaging {
  ctran::DeviceWindowHandle window;
  size_t halfBytes = 0;    ///< each rank's data area is two parity halves of this size
  size_t chunkBlocks = 0;  ///< quantizer blocks per chunk
  size_t chunkBytes = 0;   ///< bytes of one chunk, a multiple of 16
  int slots = 1;           ///< 1 when one round covers the call, else 2
  int blocks = 1;          ///< grid size
  int threads = 512;       ///< block size (a multiple of 32)
  ctran::WaitBound bound;  ///< bound of every in-kernel wait
  /// Peers' waiting blocks may sit on every SM: keep their shared memory free
  /// (ctran/kernel_launch.cuh).
  bool keepSharedMemoryFree = false;
};

/// Most ranks a low-precision kernel serves (its segment tables are this long).
constexpr int kLpMaxRanks = ctran::kMaxDeviceRanks;
/// Most grid blocks of a low-precision kernel (each needs an epoch slot and its flags).
constexpr int kLpMaxBlocks = 256;
static_assert(kLpMaxBlocks <= ctran::kMaxEpochSlots, "every block needs an epoch slot");
/// Threads per block of the low-precision kernels (their __launch_bounds__).
constexpr int kLpThreads = 512;

/// Signal flags: one per (parity half, phase, source rank, grid block, round slot).
constexpr int kLpNumSignals = 2 * 2 * kLpMaxRanks * kLpMaxBlocks * 2;
RCCLX_LP_HOST_DEVICE inline constexpr int lpSignalIndex(int half, int phase, int src, int block,
                                                        int slot) {
  return (((half * 2 + phase) * kLpMaxRanks + src) * kLpMaxBlocks + block) * 2 + slot;
}
/// Phases, as indices into the signal layout.
constexpr int kLpPhaseA = 0;  ///< allreduce: reduce-scatter data; exchanges: data
constexpr int kLpPhaseB = 1;  ///< allreduce: all-gather data; exchanges: acknowledgements

/// The fused allreduce: quantize -> reduce-scatter -> requantize -> all-gather -> dequantize.
struct LpAllReduceArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;  ///< elements
  bool bf16 = false;
  bool average = false;
  int blockElems = 256;
  LpStaging staging;
};
void launchLpAllReduce(const LpAllReduceArgs& args, void* stream);

/// The one-quantization exchanges (all_gather, reduce_scatter, all_to_all): this rank
/// quantizes segment p of send for each rank p into that rank's staging, then decodes what
/// every rank sent it: each into its place in recv (gather), or summed into recv (reduce).
struct LpExchangeArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t sendOffset[kLpMaxRanks] = {};  ///< elements: the segment for rank p
  size_t sendCount[kLpMaxRanks] = {};
  size_t recvOffset[kLpMaxRanks] = {};  ///< elements: where rank q's segment goes (gather)
  size_t recvCount[kLpMaxRanks] = {};
  bool sameSegment = false;  ///< every rank gets the same segment (all_gather): quantize once
  bool reduce = false;       ///< sum the received segments into recv (reduce_scatter)
  bool average = false;
  bool bf16 = false;
  int blockElems = 256;
  size_t maxBlocks = 0;  ///< most quantizer blocks of any segment any rank sends (all agree)
  LpStaging staging;
};
void launchLpExchange(const LpExchangeArgs& args, void* stream);

/// Threads of each kernel one SM holds at once (the occupancy API), for co_residency.hpp.
int lpAllReduceThreadsPerSm();
int lpExchangeThreadsPerSm();

}  // namespace rcclx::lp
