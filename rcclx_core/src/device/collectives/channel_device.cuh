// Device side of the channel plan (channel_plan.hpp): byte copies at the widest width both
// pointers allow, and the send, receive and self roles that copy_blocks.cu and reduce_blocks.cu
// are built from. Every role function is called by all threads of its block.
#pragma once

#include <cstdint>

#include "ctran/gpu_runtime.hpp"
#include "ctran/signal_device.cuh"
#include "device/collectives/channel_plan.hpp"

namespace rcclx::gpu {

/// Copies n / sizeof(W) words; `kStaged`: the source is staging a peer wrote (loaded with
/// loadPeerStored, after the acquire that saw its flag).
template <typename W, bool kStaged>
__device__ __forceinline__ void copyWords(char* dst, const char* src, size_t n, int tid, int nthr) {
  constexpr int kBatch = 4;  // loads in flight together before their stores
  const W* s = reinterpret_cast<const W*>(src);
  W* d = reinterpret_cast<W*>(dst);
  const size_t m = n / sizeof(W);
  for (size_t i0 = tid; i0 < m; i0 += static_cast<size_t>(kBatch) * nthr) {
    W v[kBatch];
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const size_t i = i0 + static_cast<size_t>(k) * nthr;
      if (i < m) v[k] = kStaged ? ctran::device::loadPeerStored(s + i) : s[i];
    }
#pragma unroll
    for (int k = 0; k < kBatch; ++k) {
      const size_t i = i0 + static_cast<size_t>(k) * nthr;
      if (i < m) d[i] = v[k];
    }
  }
}

/// Copies n bytes with the block's threads: 16-byte words when both pointers are 16-byte
/// aligned, else the widest width they share, then the tail byte by byte.
template <bool kStaged>
__device__ __forceinline__ void copyBytes(char* dst, const char* src, size_t n, int tid, int nthr) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src);
  size_t body;
  if (a % 16 == 0) {
    body = n & ~size_t{15};
    copyWords<uint4, kStaged>(dst, src, body, tid, nthr);
  } else if (a % 8 == 0) {
    body = n & ~size_t{7};
    copyWords<uint2, kStaged>(dst, src, body, tid, nthr);
  } else if (a % 4 == 0) {
    body = n & ~size_t{3};
    copyWords<unsigned int, kStaged>(dst, src, body, tid, nthr);
  } else if (a % 2 == 0) {
    body = n & ~size_t{1};
    copyWords<unsigned short, kStaged>(dst, src, body, tid, nthr);
  } else {
    body = 0;
  }
  const unsigned char* s = reinterpret_cast<const unsigned char*>(src);
  unsigned char* d = reinterpret_cast<unsigned char*>(dst);
  for (size_t i = body + tid; i < n; i += nthr)
    d[i] = kStaged ? ctran::device::loadPeerStored(s + i) : s[i];
}

/// The role of this block: the last role whose first block is at or below it. The loop has
/// constant indices, so the plan stays in the parameter space (no local copy).
__device__ __forceinline__ ExchangeRole findRole(const ExchangePlan& p) {
  ExchangeRole r = p.roles[0];
#pragma unroll
  for (int i = 1; i < kMaxRoles; ++i) {
    if (i < p.nroles && static_cast<int>(blockIdx.x) >= p.roles[i].firstBlock) r = p.roles[i];
  }
  return r;
}

__device__ __forceinline__ uint64_t* chunkCounter(const ExchangePlan& p, int dir, int peer,
                                                  int lane) {
  return reinterpret_cast<uint64_t*>(p.win.data[p.win.rank] + p.layout.counter(dir, peer, lane));
}

/// Bytes of chunk j of a role (0 for a token chunk).
__device__ __forceinline__ size_t chunkLength(const ExchangeRole& r, size_t j) {
  const size_t off = j * r.chunkBytes;
  if (off >= r.bytes) return 0;
  return r.bytes - off < r.chunkBytes ? r.bytes - off : r.chunkBytes;
}

/// Stores a chunk into a peer's slot as it is (sendRole's default).
struct PlainChunkCopy {
  __device__ __forceinline__ void operator()(char* dst, const char* src, size_t n, int tid,
                                             int nthr) const {
    copyBytes<false>(dst, src, n, tid, nthr);
  }
};

/// kSend: lane `lane` of the transfer to r.peer. `copy(dst, src, n, tid, nthr)` stores each
/// chunk of n bytes into the peer's slot (16-byte aligned, slotBytes long).
template <typename Copy = PlainChunkCopy>
__device__ __forceinline__ void sendRole(const ExchangePlan& p, const ExchangeRole& r, int lane,
                                         Copy copy = Copy{}) {
  using ctran::device::signalRelease;
  using ctran::device::signalWait;
  const ctran::DeviceWindowHandle& h = p.win;
  const int me = h.rank;
  const int tid = threadIdx.x;
  const int nthr = blockDim.x;
  uint64_t* counter = chunkCounter(p, kSendCounter, r.peer, lane);
  const uint64_t base = *counter;
  uint64_t k = 0;
  for (size_t j = lane; j < r.chunks; j += r.blocks, ++k) {
    const uint64_t g = base + k + 1;
    const int slot = static_cast<int>((g - 1) % kChannelSlots);
    if (g > kChannelSlots) {
      if (tid == 0)
        signalWait(h.signals[me] + ackSignal(r.peer, lane), g - kChannelSlots, me, r.peer, p.bound,
                   "a free staging slot");
      __syncthreads();
    }
    char* dst = h.data[r.peer] + p.layout.slot(me, lane, slot);
    copy(dst, r.src + j * r.chunkBytes, chunkLength(r, j), tid, nthr);
    __syncthreads();
    if (tid == 0) signalRelease(h.signals[r.peer] + readySignal(me, lane), g);
  }
  if (tid == 0) *counter = base + k;
}

/// kRecv: lane `lane` of the transfer from r.peer.
__device__ __forceinline__ void recvRole(const ExchangePlan& p, const ExchangeRole& r, int lane) {
  using ctran::device::signalRelease;
  using ctran::device::signalWait;
  const ctran::DeviceWindowHandle& h = p.win;
  const int me = h.rank;
  const int tid = threadIdx.x;
  const int nthr = blockDim.x;
  uint64_t* counter = chunkCounter(p, kRecvCounter, r.peer, lane);
  const uint64_t base = *counter;
  uint64_t k = 0;
  for (size_t j = lane; j < r.chunks; j += r.blocks, ++k) {
    const uint64_t g = base + k + 1;
    const int slot = static_cast<int>((g - 1) % kChannelSlots);
    if (tid == 0)
      signalWait(h.signals[me] + readySignal(r.peer, lane), g, me, r.peer, p.bound,
                 "a staged chunk");
    __syncthreads();
    const char* src = h.data[me] + p.layout.slot(r.peer, lane, slot);
    copyBytes<true>(r.dst + j * r.chunkBytes, src, chunkLength(r, j), tid, nthr);
    __syncthreads();
    if (tid == 0) signalRelease(h.signals[r.peer] + ackSignal(me, lane), g);
  }
  if (tid == 0) *counter = base + k;
}

/// kSelf: piece `piece` (of r.chunkBytes bytes) of a local copy.
__device__ __forceinline__ void selfRole(const ExchangeRole& r, int piece) {
  const size_t off = static_cast<size_t>(piece) * r.chunkBytes;
  if (off >= r.bytes) return;
  const size_t n = r.bytes - off < r.chunkBytes ? r.bytes - off : r.chunkBytes;
  copyBytes<false>(r.dst + off, r.src + off, n, threadIdx.x, blockDim.x);
}

}  // namespace rcclx::gpu
