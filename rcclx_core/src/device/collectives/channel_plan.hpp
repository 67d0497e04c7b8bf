// The plan that the two generic GPU kernels (copy_blocks.cu, reduce_blocks.cu) execute: a small
// trivially copyable list of roles, each a range of thread blocks, over device channels that
// live in a DeviceWindow of their own. No GPU runtime types here: host-only code includes it.
//
// Device channels. From every rank s to every rank r there are up to kMaxLanes lanes; lane l
// owns kChannelSlots staging slots in r's window, written by s (pushed over NVLink) and read by
// r. A transfer of `bytes` from s to r is cut into chunks of at most slotBytes; chunk j goes on
// lane j % lanes. Both ends derive the same shape from `bytes` alone (laneShape), so a sender
// and its receiver agree without exchanging anything on the hot path.
//   * Sequence numbers: each (direction, peer, lane) counts its chunks forever, in device memory
//     of this rank (the counters area), read at kernel entry and written back by the one block
//     that owns it before the kernel ends, so captured graphs replay with fresh numbers. No
//     global epoch: a kernel that only some ranks launch (send / recv) keeps the others in step.
//   * Chunk g (1-based over the lane's life) uses slot (g - 1) % kChannelSlots. The sender waits
//     until the receiver's ACK flag for that lane reaches g - kChannelSlots (the slot is free),
//     stores the chunk, then releases READY = g into the receiver's flags; the receiver
//     acquires READY >= g, copies (or reduces) the chunk out, then releases ACK = g into the
//     sender's flags. Flags only grow.
//   * A zero-byte transfer moves nothing; a "token" transfer (barrier) moves one empty chunk.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/device_window.hpp"
#include "device/allreduce/launch.hpp"
#include "device/co_residency.hpp"

namespace rcclx::gpu {

/// Most lanes (thread blocks, each with its own slots) per direction of a rank pair: enough
/// blocks storing over NVLink at once to fill it.
constexpr int kMaxLanes = 64;
/// Staging slots per lane (two: one is filled while the other drains).
constexpr int kChannelSlots = 2;
/// Roles a plan holds: a send and a receive role per peer, plus a reduce or self role.
constexpr int kMaxRoles = 2 * ctran::kMaxDeviceRanks + 2;
/// A transfer takes one lane per this many bytes (up to the lane limit).
constexpr size_t kLaneMinBytes = size_t{16} << 10;
/// Thread blocks of all send / receive roles of one kernel stay near this many, so that every
/// block of both ranks' kernels can be resident at once (they wait on each other), each rank on
/// a GPU of its own; channelBlockBudget() lowers it where ranks share one.
constexpr int kChannelBlockBudget = 128;
/// Signal flags of a channel window: READY by source rank and ACK by destination rank.
constexpr int kChannelSignals = 2 * ctran::kMaxDeviceRanks * kMaxLanes;

/// Index of the READY flag (in the receiver's window) of chunks from `src` on `lane`.
RCCLX_HOST_DEVICE inline constexpr int readySignal(int src, int lane) {
  return src * kMaxLanes + lane;
}
/// Index of the ACK flag (in the sender's window) of chunks consumed by `dst` on `lane`.
RCCLX_HOST_DEVICE inline constexpr int ackSignal(int dst, int lane) {
  return (ctran::kMaxDeviceRanks + dst) * kMaxLanes + lane;
}

/// Directions of the per-lane chunk counters.
enum CounterDir : int { kSendCounter = 0, kRecvCounter = 1 };

/// Where things live in every rank's channel window data area (the same on all ranks).
struct ChannelLayout {
  size_t countersOffset = 0;  ///< uint64 [2 dirs][kMaxDeviceRanks][kMaxLanes], local only
  size_t stagingOffset = 0;   ///< [source rank][lane][slot] slots of slotBytes
  size_t slotBytes = 0;       ///< largest chunk (a multiple of 16)
  size_t totalBytes = 0;
  /// The layout for `nranks` with `perPeerBytes` of staging per source rank.
  static ChannelLayout of(int nranks, size_t perPeerBytes);
  /// Byte offset of a slot inside the data area.
  RCCLX_HOST_DEVICE size_t slot(int src, int lane, int s) const {
    return stagingOffset +
           ((static_cast<size_t>(src) * kMaxLanes + lane) * kChannelSlots + s) * slotBytes;
  }
  /// Byte offset of a chunk counter inside the data area.
  RCCLX_HOST_DEVICE size_t counter(int dir, int peer, int lane) const {
    return countersOffset +
           ((static_cast<size_t>(dir) * ctran::kMaxDeviceRanks + peer) * kMaxLanes + lane) * 8;
  }
};

/// How a transfer of some bytes is cut: `chunks` chunks of `chunkBytes` (the last may be
/// shorter) spread round-robin over `lanes` lanes.
struct LaneShape {
  int lanes = 0;
  size_t chunkBytes = 0;
  size_t chunks = 0;
};

/// Most blocks of a self copy.
constexpr int kMaxSelfBlocks = 32;

/// The blocks one kernel's roles may take (the same on every rank).
struct ChannelBlocks {
  int transfers = kChannelBlockBudget;  ///< all send / receive (and reduce) roles together
  int self = kMaxSelfBlocks;            ///< a self copy
  /// Peers' waiting blocks may sit on every SM: keep their shared memory free
  /// (ctran/kernel_launch.cuh).
  bool keepSharedMemoryFree = false;
};
/// ChannelBlocks on GPUs of their own; where ranks share a GPU, fewer, so that the whole grid
/// fits beside the peers' (a fifth of it for the self copy).
ChannelBlocks channelBlocks(const CoResidency& coResidency);

/// The shape both ends of a transfer use: a function of the bytes, the rank count and the
/// transfers' block budget (the same on every rank) only.
LaneShape laneShape(size_t bytes, bool token, int nranks, size_t slotBytes,
                    int blockBudget = kChannelBlockBudget);

enum class RoleKind : int { kSend = 0, kRecv = 1, kReduce = 2, kSelf = 3 };

/// Blocks [firstBlock, firstBlock + blocks) of a kernel doing one thing.
///  kSend:   push `bytes` from src into `peer`'s staging (block i = lane i);
///  kRecv:   copy the chunks `peer` pushes out of this rank's staging into dst;
///  kReduce: dst = op over all ranks, in rank order, of their chunks (this rank's own from src);
///           block i = lane i of every peer's transfer to this rank;
///  kSelf:   copy src to dst on this GPU (block i copies the i-th piece).
struct ExchangeRole {
  RoleKind kind = RoleKind::kSelf;
  int peer = -1;
  int firstBlock = 0;
  int blocks = 0;
  size_t bytes = 0;
  size_t chunkBytes = 0;  ///< kSelf: bytes per block
  size_t chunks = 0;
  const char* src = nullptr;
  char* dst = nullptr;
};

/// Everything a copy_blocks / reduce_blocks kernel reads (passed by value).
struct ExchangePlan {
  ctran::DeviceWindowHandle win;
  ChannelLayout layout;
  ctran::WaitBound bound;
  int nroles = 0;
  int blocks = 0;        ///< grid size: the sum of the roles' blocks
  int threads = 0;       ///< per block
  int avgDivisor = 1;    ///< reduce: nranks for AVG
  bool aligned = false;  ///< reduce: its src and dst are 16-byte aligned
  /// Peers' waiting blocks may sit on every SM: keep their shared memory free
  /// (ctran/kernel_launch.cuh).
  bool keepSharedMemoryFree = false;
  /// PREMUL_SUM: this rank's scalar (its send roles and reduce role scale its input).
  double premulScalar = 1.0;
  ExchangeRole roles[kMaxRoles];
};

/// Builds a plan role by role (host side). Add send roles first: blocks are numbered in the
/// order roles are added, and low-numbered blocks start first.
class PlanBuilder {
 public:
  PlanBuilder(const ctran::DeviceWindowHandle& win, const ChannelLayout& layout,
              ctran::WaitBound bound, ChannelBlocks blocks = {});
  /// Push `bytes` from `src` to `peer`; `token`: one empty chunk even when bytes is 0.
  void send(int peer, const void* src, size_t bytes, bool token = false);
  /// Receive `bytes` from `peer` into `dst`.
  void recv(int peer, void* dst, size_t bytes, bool token = false);
  /// Copy `bytes` from `src` to `dst` on this GPU (nothing when they are equal or bytes is 0).
  void self(const void* src, void* dst, size_t bytes);
  /// dst = op over all ranks' `bytes` in rank order, this rank's own from `own`, the others'
  /// pushed by their send roles (the same bytes each).
  void reduce(const void* own, void* dst, size_t bytes, int avgDivisor);
  /// PREMUL_SUM: the reduce kernel's send roles and reduce role multiply this rank's input by
  /// `scalar` as they load it (the copy kernel ignores it).
  void premulScalar(double scalar) { plan_.premulScalar = scalar; }
  /// The plan, its thread count chosen from its largest chunk.
  const ExchangePlan& finish();

 private:
  void add(const ExchangeRole& r);
  ExchangePlan plan_;
  size_t maxChunk_ = 0;
  ChannelBlocks blocks_;
};

/// Enqueues the copy kernel (send, receive and self roles) of `plan` on `stream`.
void launchCopyBlocks(const ExchangePlan& plan, void* stream);
/// Enqueues the reduce kernel (send roles and one reduce role) of `plan` on `stream`; (type, op)
/// passed gpuSupports(). Bitwise operators run on bytes (kernelType()).
void launchReduceBlocks(const ExchangePlan& plan, DataType type, RedOp op, void* stream);

/// Threads of each kernel one SM holds at once (the occupancy API at kMaxThreads per block),
/// for co_residency.hpp; builds with GPU code only.
int copyBlocksThreadsPerSm();
int reduceBlocksThreadsPerSm();

}  // namespace rcclx::gpu
