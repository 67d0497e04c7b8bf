// Host side of channel_plan.hpp: the channel window's layout, the lane shape both ends of a
// transfer agree on, and the plan builder.
#include "device/collectives/channel_plan.hpp"

#include <algorithm>

#include "ctran/checks.hpp"

namespace rcclx::gpu {
namespace {

size_t roundUp(size_t x, size_t to) { return (x + to - 1) / to * to; }
size_t divUp(size_t a, size_t b) { return (a + b - 1) / b; }

/// Self copies take one block per this many bytes, up to ChannelBlocks::self.
constexpr size_t kSelfBlockBytes = size_t{256} << 10;

}  // namespace

ChannelLayout ChannelLayout::of(int nranks, size_t perPeerBytes) {
  ChannelLayout l;
  l.slotBytes = perPeerBytes / (kMaxLanes * kChannelSlots) / 16 * 16;
  CTRAN_CHECK(l.slotBytes >= 4096, ctran::InvalidArgument, "GPU channel staging of ", perPeerBytes,
              " bytes per rank is too small (RCCLX_GPU_CHANNEL_BYTES must be at least ",
              4096 * kMaxLanes * kChannelSlots, ")");
  l.countersOffset = 0;
  l.stagingOffset = roundUp(2 * ctran::kMaxDeviceRanks * kMaxLanes * sizeof(uint64_t), 256);
  l.totalBytes =
      l.stagingOffset + static_cast<size_t>(nranks) * kMaxLanes * kChannelSlots * l.slotBytes;
  return l;
}

ChannelBlocks channelBlocks(const CoResidency& coResidency) {
  const int unshared = kChannelBlockBudget + kMaxSelfBlocks;
  const int fits = coResidency.fit(WaitingKernel::kChannels, unshared, kMaxThreads);
  ChannelBlocks b;
  b.keepSharedMemoryFree = coResidency.keepSharedMemoryFree();
  if (fits == unshared) return b;
  b.self = std::max(fits / 5, 1);
  b.transfers = std::max(fits - b.self, 1);
  return b;
}

LaneShape laneShape(size_t bytes, bool token, int nranks, size_t slotBytes, int blockBudget) {
  LaneShape s;
  if (bytes == 0) {
    if (token) s = {1, 0, 1};
    return s;
  }
  const int pairs = 2 * std::max(nranks - 1, 1);
  const size_t maxLanes = static_cast<size_t>(std::clamp(blockBudget / pairs, 1, kMaxLanes));
  size_t lanes = std::min(maxLanes, divUp(bytes, kLaneMinBytes));
  s.chunkBytes = std::min(roundUp(divUp(bytes, lanes), 16), slotBytes);
  s.chunks = divUp(bytes, s.chunkBytes);
  s.lanes = static_cast<int>(std::min(lanes, s.chunks));
  return s;
}

PlanBuilder::PlanBuilder(const ctran::DeviceWindowHandle& win, const ChannelLayout& layout,
                         ctran::WaitBound bound, ChannelBlocks blocks)
    : blocks_(blocks) {
  plan_.win = win;
  plan_.layout = layout;
  plan_.bound = bound;
  plan_.keepSharedMemoryFree = blocks.keepSharedMemoryFree;
}

void PlanBuilder::add(const ExchangeRole& role) {
  if (role.blocks == 0) return;
  CTRAN_ASSERT(plan_.nroles < kMaxRoles, "exchange plan: more than ", kMaxRoles, " roles");
  ExchangeRole r = role;
  r.firstBlock = plan_.blocks;
  plan_.roles[plan_.nroles++] = r;
  plan_.blocks += r.blocks;
  maxChunk_ = std::max(maxChunk_, r.chunkBytes);
}

void PlanBuilder::send(int peer, const void* src, size_t bytes, bool token) {
  const LaneShape s =
      laneShape(bytes, token, plan_.win.nranks, plan_.layout.slotBytes, blocks_.transfers);
  ExchangeRole r;
  r.kind = RoleKind::kSend;
  r.peer = peer;
  r.blocks = s.lanes;
  r.bytes = bytes;
  r.chunkBytes = s.chunkBytes;
  r.chunks = s.chunks;
  r.src = static_cast<const char*>(src);
  add(r);
}

void PlanBuilder::recv(int peer, void* dst, size_t bytes, bool token) {
  const LaneShape s =
      laneShape(bytes, token, plan_.win.nranks, plan_.layout.slotBytes, blocks_.transfers);
  ExchangeRole r;
  r.kind = RoleKind::kRecv;
  r.peer = peer;
  r.blocks = s.lanes;
  r.bytes = bytes;
  r.chunkBytes = s.chunkBytes;
  r.chunks = s.chunks;
  r.dst = static_cast<char*>(dst);
  add(r);
}

void PlanBuilder::self(const void* src, void* dst, size_t bytes) {
  if (bytes == 0 || src == dst) return;
  ExchangeRole r;
  r.kind = RoleKind::kSelf;
  r.blocks = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(blocks_.self), divUp(bytes, kSelfBlockBytes)));
  r.chunkBytes = roundUp(divUp(bytes, static_cast<size_t>(r.blocks)), 16);
  r.blocks = static_cast<int>(divUp(bytes, r.chunkBytes));
  r.bytes = bytes;
  r.src = static_cast<const char*>(src);
  r.dst = static_cast<char*>(dst);
  add(r);
}

void PlanBuilder::reduce(const void* own, void* dst, size_t bytes, int avgDivisor) {
  const LaneShape s =
      laneShape(bytes, false, plan_.win.nranks, plan_.layout.slotBytes, blocks_.transfers);
  ExchangeRole r;
  r.kind = RoleKind::kReduce;
  r.blocks = s.lanes;
  r.bytes = bytes;
  r.chunkBytes = s.chunkBytes;
  r.chunks = s.chunks;
  r.src = static_cast<const char*>(own);
  r.dst = static_cast<char*>(dst);
  plan_.avgDivisor = avgDivisor;
  plan_.aligned =
      ((reinterpret_cast<uintptr_t>(own) | reinterpret_cast<uintptr_t>(dst)) % kUnitBytes) == 0;
  add(r);
}

const ExchangePlan& PlanBuilder::finish() {
  // About four 16-byte words per thread of the largest chunk, in whole warps.
  const size_t want = roundUp(divUp(std::max<size_t>(maxChunk_, 1), 4 * kUnitBytes), 32);
  plan_.threads = static_cast<int>(std::clamp<size_t>(want, 64, kMaxThreads));
  return plan_;
}

}  // namespace rcclx::gpu
