// The alltoallv_dynamic kernel (gpu_alltoallv_dynamic.hpp): L = args.lanes blocks send to each
// rank and L receive from each: block b < nL sends to rank b / L as lane b % L, block nL + b
// receives from rank b / L as lane b % L. Lane l moves chunks l, l + L, l + 2L... of a block.
// The last args.selfBlocks blocks copy this rank's own block from input to output (chunk k by
// block k mod selfBlocks); this rank's receive lanes for itself only place it.
// Signals of each rank's window, by index (all 64-bit, epoch in the high half so they only
// grow):
//   count(s)       [s]                  from rank s: epoch | rows (kInvalid: s's counts invalid)
//   ready(s, l)    [n + sL + l]         from rank s: epoch | chunks of lane l stored here
//   ack(p, l)      [n + nL + pL + l]    from receiver p: epoch | chunks of lane l it consumed;
//                                       epoch | kDone once lane l read all of this call
//   countsRead     [n + 2nL]            local: blocks that read every count (nL + selfBlocks
//                                       per call; no receive block sends kDone before all
//                                       did, since each reads every sender's count)
// Lane l of source s owns two slots of slotBytes in every receiver's data area, at
// (2(sL + l) + k) x slotBytes. A sender lane waits for its receiver lane's kDone of the
// previous call before it writes this call's count (lane 0) or chunks, so no call overwrites
// what a slower peer still reads.
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "ctran/signal_device.cuh"
#include "device/alltoallv_dynamic/gpu_alltoallv_dynamic.hpp"

namespace rcclx::gpu {
namespace {

using ctran::device::loadPeerStored;
using ctran::device::signalAcquire;
using ctran::device::signalRelease;
using ctran::device::signalWait;

constexpr int kThreads = kDynamicThreads;
constexpr uint64_t kInvalid = 0xFFFFFFFFull;
constexpr uint64_t kDone = 0xFFFFFFFFull;

__device__ __forceinline__ uint64_t tagged(uint32_t epoch, uint64_t low) {
  return (static_cast<uint64_t>(epoch) << 32) | low;
}

/// The row where block p starts in the input (input_offsets, or packed).
__device__ int64_t sendStart(const DynamicCall& c, int p) {
  if (c.sendOffsets != nullptr) return c.sendOffsets[p];
  int64_t at = 0;
  for (int q = 0; q < p; ++q) at += c.sendSplits[q];
  return at;
}

/// -1 when this rank's counts are valid (as on host buffers; a block's rows must also fit the
/// 32 bits of a count word), else the first bad entry.
__device__ int badSendEntry(const DynamicCall& c, int n) {
  const int bad =
      firstBadSendEntry(c.sendSplits, c.sendOffsets, n, static_cast<int64_t>(c.sendRows));
  if (bad >= 0) return bad;
  for (int p = 0; p < n; ++p) {
    if (static_cast<uint64_t>(c.sendSplits[p]) >= kInvalid) return p;
  }
  return -1;
}

/// The block's threads copy `len` bytes (16-byte vectors when everything is aligned).
template <bool kFromPeer>
__device__ void blockCopy(char* dst, const char* src, size_t len) {
  const auto bits = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | len;
  if ((bits & 15) == 0) {
    auto* d = reinterpret_cast<int4*>(dst);
    const auto* s = reinterpret_cast<const int4*>(src);
    for (size_t i = threadIdx.x; i < len / 16; i += blockDim.x)
      d[i] = kFromPeer ? loadPeerStored(s + i) : s[i];
    return;
  }
  for (size_t i = threadIdx.x; i < len; i += blockDim.x)
    dst[i] =
        kFromPeer
            ? static_cast<char>(loadPeerStored(reinterpret_cast<const unsigned char*>(src) + i))
            : src[i];
}

__device__ void record(DynamicStatus* s, int kind, int sender, int receiver, int entry,
                       int64_t rows, int64_t at, int64_t total, int64_t capacity) {
  volatile DynamicStatus* v = s;
  v->sender = sender;
  v->receiver = receiver;
  v->entry = entry;
  v->rows = rows;
  v->at = at;
  v->total = total;
  v->capacity = capacity;
  __threadfence_system();
  v->kind = kind;
}

/// Where the signals of the layout above sit.
struct Layout {
  int n, lanes;
  __device__ int count(int s) const { return s; }
  __device__ int ready(int s, int l) const { return n + s * lanes + l; }
  __device__ int ack(int p, int l) const { return n + n * lanes + p * lanes + l; }
  __device__ int countsRead() const { return n + 2 * n * lanes; }
  __device__ size_t slot(int s, int l, size_t j, size_t slotBytes) const {
    return (2 * static_cast<size_t>(s * lanes + l) + j % 2) * slotBytes;
  }
};

/// Chunks of `bytes` that lane `lane` of `lanes` moves (chunks lane, lane + lanes, ...).
__device__ size_t laneChunks(size_t bytes, size_t slotBytes, int lane, int lanes) {
  const size_t chunks = (bytes + slotBytes - 1) / slotBytes;
  return chunks > static_cast<size_t>(lane) ? (chunks - lane + lanes - 1) / lanes : 0;
}

__device__ void sendBlock(const DynamicKernelArgs& a, uint32_t epoch, int peer, int lane) {
  const auto& h = a.window;
  const auto& c = a.call;
  const int n = h.nranks, me = h.rank, lanes = a.lanes;
  const Layout at{n, lanes};
  __shared__ int64_t rows, start;
  if (threadIdx.x == 0) {
    const int bad = badSendEntry(c, n);
    if (peer == me && lane == 0 && bad >= 0) {
      record(a.status + blockIdx.x, DynamicStatus::kInvalidOwn, me, -1, bad, c.sendSplits[bad], 0,
             0, static_cast<int64_t>(c.sendRows));
    }
    rows = bad >= 0 ? 0 : c.sendSplits[peer];
    start = bad >= 0 ? 0 : sendStart(c, peer);
    if (peer != me) {
      uint64_t* ack = &h.signals[me][at.ack(peer, lane)];
      if (epoch > 1) signalWait(ack, tagged(epoch, 0) - 1, me, peer, a.bound, "the ack");
      if (lane == 0 && !c.recvSplitsKnown)
        signalRelease(&h.signals[peer][at.count(me)],
                      tagged(epoch, bad >= 0 ? kInvalid : static_cast<uint64_t>(rows)));
    }
  }
  __syncthreads();
  if (peer == me) return;  // the receive blocks of this rank copy its own block
  const size_t bytes = static_cast<size_t>(rows) * c.rowBytes;
  const char* src = static_cast<const char*>(c.send) + static_cast<size_t>(start) * c.rowBytes;
  const size_t mine = laneChunks(bytes, a.slotBytes, lane, lanes);
  for (size_t j = 0; j < mine; ++j) {
    if (threadIdx.x == 0 && j >= 2) {
      signalWait(&h.signals[me][at.ack(peer, lane)], tagged(epoch, j - 1), me, peer, a.bound,
                 "a free slot");
    }
    __syncthreads();
    const size_t off = (j * lanes + lane) * a.slotBytes;
    const size_t len = bytes - off < a.slotBytes ? bytes - off : a.slotBytes;
    blockCopy<false>(h.data[peer] + at.slot(me, lane, j, a.slotBytes), src + off, len);
    __syncthreads();
    if (threadIdx.x == 0) signalRelease(&h.signals[peer][at.ready(me, lane)], tagged(epoch, j + 1));
  }
}

/// Every sender's count for this rank (-1: invalid), into `counts`; then this block is
/// counted as having read them.
__device__ void readCounts(const DynamicKernelArgs& a, uint32_t epoch, int64_t* counts) {
  const auto& h = a.window;
  const auto& c = a.call;
  const int n = h.nranks, me = h.rank, t = threadIdx.x;
  const Layout at{n, a.lanes};
  if (t < n) {
    int64_t v;
    if (c.recvSplitsKnown) {
      v = c.recvSplits[t];
    } else if (t == me) {
      v = badSendEntry(c, n) >= 0 ? -1 : c.sendSplits[me];
    } else {
      const uint64_t* flag = &h.signals[me][at.count(t)];
      signalWait(flag, tagged(epoch, 0), me, t, a.bound, "a count");
      const uint64_t low = signalAcquire(flag) & 0xFFFFFFFFull;
      v = low == kInvalid ? -1 : static_cast<int64_t>(low);
    }
    counts[t] = v;
  }
  __syncthreads();
  if (t == 0) {
    __threadfence();
    atomicAdd(reinterpret_cast<unsigned long long*>(&h.signals[me][at.countsRead()]), 1ull);
  }
}

__device__ void recvBlock(const DynamicKernelArgs& a, uint32_t epoch, int peer, int lane) {
  const auto& h = a.window;
  const auto& c = a.call;
  const int n = h.nranks, me = h.rank, lanes = a.lanes, t = threadIdx.x;
  const Layout lay{n, lanes};
  __shared__ int64_t counts[ctran::kMaxDeviceRanks];
  readCounts(a, epoch, counts);
  const auto cap = static_cast<int64_t>(c.capacityRows);
  const BlockPlace place = placeBlock(counts, n, peer, cap);
  const int64_t at = place.at, sent = place.sent, kept = place.kept, total = place.total;
  if (t == 0 && lane == 0) {
    if (!c.recvSplitsKnown) c.recvSplits[peer] = kept;
    if (c.recvOffsets != nullptr) c.recvOffsets[peer] = at;
    DynamicStatus* st = a.status + blockIdx.x;
    if (counts[peer] < 0 && peer != me) {
      record(st, DynamicStatus::kInvalidPeer, peer, me, 0, 0, 0, 0, 0);
    } else if (kept < sent) {
      record(st, DynamicStatus::kOverflow, peer, me, 0, sent, at, total, cap);
    }
  }
  char* dst = static_cast<char*>(c.recv) + static_cast<size_t>(at) * c.rowBytes;
  const size_t keptBytes = static_cast<size_t>(kept) * c.rowBytes;
  if (peer == me) return;  // the self-copy blocks copy it
  if (t == 0) {
    // Every block of this kernel is resident (at most kMaxEpochSlots), so waiting for the
    // others here cannot deadlock.
    const uint64_t readers = static_cast<uint64_t>(n * lanes + a.selfBlocks);
    signalWait(&h.signals[me][lay.countsRead()], epoch * readers, me, me, a.bound,
               "this rank's receive blocks");
  }
  const size_t bytes = static_cast<size_t>(sent) * c.rowBytes;
  const size_t mine = laneChunks(bytes, a.slotBytes, lane, lanes);
  uint64_t* ack = &h.signals[peer][lay.ack(me, lane)];
  for (size_t j = 0; j < mine; ++j) {
    if (t == 0)
      signalWait(&h.signals[me][lay.ready(peer, lane)], tagged(epoch, j + 1), me, peer, a.bound,
                 "a chunk");
    __syncthreads();
    const size_t off = (j * lanes + lane) * a.slotBytes;
    const size_t len = bytes - off < a.slotBytes ? bytes - off : a.slotBytes;
    // Rows past the capacity arrive (the sender cannot know) and are dropped here.
    const size_t keep = keptBytes > off ? (keptBytes - off < len ? keptBytes - off : len) : 0;
    blockCopy<true>(dst + off, h.data[me] + lay.slot(peer, lane, j, a.slotBytes), keep);
    __syncthreads();
    if (t == 0) signalRelease(ack, tagged(epoch, j + 1));
  }
  if (t == 0) signalRelease(ack, tagged(epoch, kDone));
}

/// Part `part` of `parts` of the copy of this rank's own block: its chunks part, part +
/// parts, ... (chunks of a slot's size), input to output, clipped at the capacity as a receive
/// block would.
__device__ void selfCopyBlock(const DynamicKernelArgs& a, uint32_t epoch, int part, int parts) {
  const auto& c = a.call;
  const int n = a.window.nranks, me = a.window.rank;
  __shared__ int64_t counts[ctran::kMaxDeviceRanks];
  readCounts(a, epoch, counts);
  const BlockPlace place = placeBlock(counts, n, me, static_cast<int64_t>(c.capacityRows));
  const size_t keptBytes = static_cast<size_t>(place.kept) * c.rowBytes;
  if (keptBytes == 0) return;
  const size_t row = c.rowBytes;
  char* dst = static_cast<char*>(c.recv) + static_cast<size_t>(place.at) * row;
  const char* src = static_cast<const char*>(c.send) + static_cast<size_t>(sendStart(c, me)) * row;
  const size_t mine = laneChunks(keptBytes, a.slotBytes, part, parts);
  for (size_t j = 0; j < mine; ++j) {
    const size_t off = (j * parts + part) * a.slotBytes;
    const size_t len = keptBytes - off < a.slotBytes ? keptBytes - off : a.slotBytes;
    blockCopy<false>(dst + off, src + off, len);
  }
}

__global__ void __launch_bounds__(kThreads) allToAllvDynamicKernel(DynamicKernelArgs a) {
  const uint32_t epoch = ctran::device::epochLoad(a.window);
  const int half = a.window.nranks * a.lanes;
  const int b = static_cast<int>(blockIdx.x);
  if (b < half) {
    sendBlock(a, epoch, b / a.lanes, b % a.lanes);
  } else if (b < 2 * half) {
    recvBlock(a, epoch, (b - half) / a.lanes, (b - half) % a.lanes);
  } else {
    selfCopyBlock(a, epoch, b - 2 * half, a.selfBlocks);
  }
  __syncthreads();
  ctran::device::epochAdvance(a.window, epoch);
}

}  // namespace

void launchAllToAllvDynamic(const DynamicKernelArgs& args, void* stream) {
  const int blocks = 2 * args.window.nranks * args.lanes + args.selfBlocks;
  ctran::launchKernel(allToAllvDynamicKernel,
                      {blocks, kThreads, stream, false, args.keepSharedMemoryFree}, args);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching alltoallv_dynamic (", blocks, " blocks)");
}

int allToAllvDynamicThreadsPerSm() {
  return ctran::gpuBlocksPerSm(allToAllvDynamicKernel, kThreads) * kThreads;
}

}  // namespace rcclx::gpu
