// GpuAllToAllvDynamic: allToAllvDynamic on GPU buffers in device code only. One kernel per
// call, kLanes blocks per peer and direction: a send block writes its count into the receiver's
// control word, then streams its rows through the receiver's staging slots (each lane every
// kLanes-th chunk); a receive block gathers every
// sender's count, places its block by a prefix sum (clipped at the capacity), writes
// output_split_sizes / output_offsets and copies the rows out of its staging. The rank's own
// block is copied input to output by kSelfBlocks more blocks (a local copy reaches memory
// bandwidth only across many SMs; four lanes would bound it). Counts, epochs and
// flags live in device memory, so a captured graph replays with new counts; an error the
// kernel records (overflow, invalid counts) lands in mapped host memory and is raised by the
// next call on the host. Memory per communicator: (1 + 2 x kLanes) x ranks + 1 64-bit control
// words and 2 x ranks x RCCLX_A2AV_DYNAMIC_SLOT_BYTES of staging (split among the lanes; 2 MiB
// at 8 ranks by default), made by the first call, plus status records of host memory (one per
// block). Compiled in GPU builds only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "alltoallv_dynamic_plan.hpp"
#include "ctran/device_window.hpp"

namespace rcclx::gpu {

class DeviceResources;

/// What a kernel block records when a call goes wrong (written by that block only).
struct DynamicStatus {
  enum Kind : int32_t { kNone = 0, kOverflow, kInvalidOwn, kInvalidPeer };
  int32_t kind = kNone;
  int32_t sender = 0;
  int32_t receiver = 0;
  int32_t entry = 0;     ///< kInvalidOwn: the input_split_sizes entry
  int64_t rows = 0;      ///< the block's rows (kInvalidOwn: the entry's value)
  int64_t at = 0;        ///< kOverflow: the row the block started at
  int64_t total = 0;     ///< kOverflow: rows sent to the receiver in all
  int64_t capacity = 0;  ///< the receiver's capacity / the sender's input rows
};

/// Threads per block of the kernel.
constexpr int kDynamicThreads = 512;

/// The kernel's arguments: trivially copyable, the same for every replay of a graph.
struct DynamicKernelArgs {
  ctran::DeviceWindowHandle window;
  DynamicCall call;
  size_t slotBytes = 0;  ///< one lane's slot
  int lanes = 1;         ///< blocks per peer and direction
  int selfBlocks = 1;    ///< blocks copying this rank's own block (after the 2 x n x lanes)
  /// Peers' waiting blocks may sit on every SM: keep their shared memory free
  /// (ctran/kernel_launch.cuh).
  bool keepSharedMemoryFree = false;
  ctran::WaitBound bound;
  DynamicStatus* status = nullptr;  ///< one record per block, device view of mapped host memory
};

/// Enqueues the kernel (2 x nranks x lanes + selfBlocks blocks) on `stream`.
void launchAllToAllvDynamic(const DynamicKernelArgs& args, void* stream);
/// Threads of the kernel one SM holds at once (the occupancy API), for co_residency.hpp.
int allToAllvDynamicThreadsPerSm();

class GpuAllToAllvDynamic {
 public:
  /// Blocks per peer and direction (fewer when 2 x ranks x kLanes would pass kMaxEpochSlots).
  static constexpr int kLanes = 4;
  /// Blocks copying the rank's own block (fewer where the grid would pass kMaxEpochSlots).
  static constexpr int kSelfBlocks = 128;

  /// Collective: the staging window (RCCLX_A2AV_DYNAMIC_SLOT_BYTES per slot) and the status
  /// records. Throws InvalidUsage while `stream` is being captured (a graph cannot allocate).
  GpuAllToAllvDynamic(DeviceResources& resources, size_t slotBytes, void* stream);
  ~GpuAllToAllvDynamic();
  GpuAllToAllvDynamic(const GpuAllToAllvDynamic&) = delete;
  GpuAllToAllvDynamic& operator=(const GpuAllToAllvDynamic&) = delete;

  /// Enqueues this call, then raises (InvalidArgument) what an earlier call's kernel
  /// recorded, clearing it (the call itself still runs, so every rank stays in step).
  void run(const DynamicCall& call, void* stream);
  /// The first recorded error's text ("" for none), cleared.
  std::string takeRecorded();

 private:
  int blocks() const { return 2 * nranks_ * lanes_; }

  DeviceResources& res_;
  ctran::DeviceWindow* window_;
  size_t slotBytes_;  ///< one lane's slot
  int nranks_;
  int lanes_;
  int selfBlocks_;
  DynamicStatus* hostStatus_ = nullptr;
  DynamicStatus* deviceStatus_ = nullptr;
};

}  // namespace rcclx::gpu
