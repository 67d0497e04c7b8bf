// The transfer kernels of nvlink_probe.cu (what each variant runs on the GPUs); the harness
// that launches, verifies and times them is nvlink_probe.cu. See its header for the variants.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace nvlink_probe {

constexpr int kStages = 2;  // tma_bulk shared-memory stages per block
constexpr uint32_t kMaxChunk = 32 << 10;

template <bool kStreaming>
__device__ __forceinline__ uint4 load16(const uint4* p) {
  return kStreaming ? __ldcs(p) : *p;
}

template <bool kStreaming>
__device__ __forceinline__ void store16(uint4* p, uint4 v) {
  if constexpr (kStreaming) {
    __stcs(p, v);
  } else {
    *p = v;
  }
}

// Four local loads are issued before the four peer stores, so a thread keeps several NVLink
// stores in flight without waiting on a load between them.
template <bool kStreaming>
__global__ void smStoreKernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = load16<kStreaming>(src + i + k * stride);
#pragma unroll
    for (int k = 0; k < 4; ++k) store16<kStreaming>(dst + i + k * stride, v[k]);
  }
  for (; i < n; i += stride) store16<kStreaming>(dst + i, load16<kStreaming>(src + i));
}

// Half the grid pushes the first half of the units (local load, peer store), the other half
// pulls the second half (peer load, local store): each direction of NVLink then carries one
// half as writes and the other as read responses.
__global__ void smMixedKernel(const uint4* __restrict__ localSrc, uint4* __restrict__ peerDst,
                              const uint4* __restrict__ peerSrc, uint4* __restrict__ localDst,
                              size_t n) {
  const size_t halfGrid = gridDim.x / 2, half = n / 2;
  const bool push = blockIdx.x < halfGrid;
  const uint4* src = push ? localSrc : peerSrc + half;
  uint4* dst = push ? peerDst : localDst + half;
  const size_t len = push ? half : n - half;
  const size_t stride = (push ? halfGrid : gridDim.x - halfGrid) * size_t(blockDim.x);
  size_t i = (push ? blockIdx.x : blockIdx.x - halfGrid) * size_t(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < len; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < 4; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < len; i += stride) dst[i] = src[i];
}

constexpr int kLineWords = 16, kLinePayload = 15, kLanesPerLine = 8, kLineBatch = 4;
constexpr uint64_t kPushFlag = 0x600DF1A6ull;

inline __host__ __device__ size_t lineCount(size_t words) {
  return (words + kLinePayload - 1) / kLinePayload;
}

// This lane's place: its 16 bytes (piece) of its line within the warp's group of 4 lines.
struct LineLane {
  int piece;
  size_t lineInGroup, warp, nWarps;
  __device__ LineLane() {
    const int lane = threadIdx.x % 32;
    piece = lane % kLanesPerLine;
    lineInGroup = lane / kLanesPerLine;
    warp = (blockIdx.x * size_t(blockDim.x) + threadIdx.x) / 32;
    nWarps = gridDim.x * size_t(blockDim.x) / 32;
  }
  // fn(line[], active[]): kLineBatch groups of 4 lines at a time, as the library's kernels.
  template <typename Fn>
  __device__ void forBatches(size_t lines, Fn&& fn) const {
    for (size_t g0 = warp; g0 * 4 < lines; g0 += kLineBatch * nWarps) {
      size_t line[kLineBatch];
      bool active[kLineBatch];
      for (int i = 0; i < kLineBatch; ++i) {
        line[i] = (g0 + i * nWarps) * 4 + lineInGroup;
        active[i] = line[i] < lines;
      }
      fn(line, active);
    }
  }
};

__device__ __forceinline__ uint64_t wordAt(const uint64_t* src, size_t w, size_t words) {
  return w < words ? src[w] : 0;
}

// Packs `words` words of src into lines at dst (flag in each line's last word).
inline __device__ void pushLines(const LineLane& l, const uint64_t* src, char* dst, size_t words,
                                 uint64_t flag) {
  const bool flagLane = l.piece == kLanesPerLine - 1;
  l.forBatches(lineCount(words), [&](const size_t* line, const bool* active) {
    uint64_t lo[kLineBatch], hi[kLineBatch];
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = line[i] * kLinePayload + 2 * l.piece;
      lo[i] = wordAt(src, w, words);
      hi[i] = flagLane ? flag : wordAt(src, w + 1, words);
    }
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      char* p = dst + line[i] * 128 + l.piece * 16;
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo[i]), "l"(hi[i])
                   : "memory");
    }
  });
}

__global__ void linesPushKernel(const uint64_t* src, char* peerLines, size_t words) {
  pushLines(LineLane(), src, peerLines, words, kPushFlag);
}

// Ends a launch: the last block to finish advances the epoch.
__device__ __forceinline__ void finishEpoch(uint32_t e, uint32_t* epoch, uint32_t* done) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(done, 1u) == gridDim.x - 1) {
      *done = 0;
      *epoch = e + 1;
    }
  }
}

// How lines_rx receives: kRx as the library's line kernels (every lane polls its 16 bytes
// with volatile loads, the payload is stored out); kRxNoStore polls only (the payload is
// folded into one word per thread, nothing is copied out: not verified); kRxSplit gives the
// even warps the pushing and the odd warps the receiving (each role half the warps).
// kRxSplitBlocks gives the first half of the blocks the pushing and the second half the
// receiving: launched with one block per SM, pushers and receivers then share no SM.
enum RxMode { kRx, kRxNoStore, kRxSplit, kRxSplitBlocks };

// Push my lines into the peer's half (epoch % 2), then poll the peer's lines in mine and copy
// their payload out. The last block to finish advances the epoch for the next launch.
template <RxMode kMode>
__global__ void linesExchangeKernel(const uint64_t* src, char* peerLines, const char* myLines,
                                    uint64_t* out, size_t words, size_t halfBytes, uint32_t* epoch,
                                    uint32_t* done) {
  LineLane l;
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(epoch);
  const uint64_t flag = e + 1;
  const size_t half = (e & 1) * halfBytes;
  const bool firstHalf = blockIdx.x < gridDim.x / 2;
  const bool pusher = kMode == kRxSplit         ? l.warp % 2 == 0
                      : kMode == kRxSplitBlocks ? firstHalf
                                                : true;
  const bool receiver = kMode == kRxSplit         ? l.warp % 2 == 1
                        : kMode == kRxSplitBlocks ? !firstHalf
                                                  : true;
  if (kMode == kRxSplit) {  // each role covers every line with its half of the warps
    l.warp /= 2;
    l.nWarps /= 2;
  }
  if (kMode == kRxSplitBlocks) {  // the same with half the blocks each
    const size_t half = gridDim.x / 2 * size_t(blockDim.x) / 32;
    if (!firstHalf) l.warp -= half;
    l.nWarps = firstHalf ? half : l.nWarps - half;
  }
  if (pusher) pushLines(l, src, peerLines + half, words, flag);
  uint64_t fold = 0;
  const bool flagLane = l.piece == kLanesPerLine - 1;
  l.forBatches(receiver ? lineCount(words) : 0, [&](const size_t* line, const bool* active) {
    uint64_t lo[kLineBatch], hi[kLineBatch];
    for (bool ready = false; !ready;) {
      ready = true;
      for (int i = 0; i < kLineBatch; ++i) {
        if (!active[i]) continue;
        const char* p = myLines + half + line[i] * 128 + l.piece * 16;
        asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                     : "=l"(lo[i]), "=l"(hi[i])
                     : "l"(p)
                     : "memory");
        ready &= !flagLane || hi[i] == flag;
      }
      ready = __all_sync(0xffffffffu, ready);
    }
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = line[i] * kLinePayload + 2 * l.piece;
      if constexpr (kMode == kRxNoStore) {
        fold ^= lo[i] ^ (flagLane ? 0 : hi[i]);
      } else {
        if (w < words) out[w] = lo[i];
        if (!flagLane && w + 1 < words) out[w + 1] = hi[i];
      }
    }
  });
  if (kMode == kRxNoStore && fold == 0x5eed) out[0] = fold;  // keeps the loads
  finishEpoch(e, epoch, done);
}

// Lines with no flag word (sentinel_rx): 16 payload words per 128-byte line. The receiver's
// staging holds a sentinel pattern (a word per position, sentinelWord) while a slot is empty;
// a line counts as arrived once any of its words differs from the pattern (the line lands
// whole, as for the flagged lines), and the receiver writes the pattern back after copying
// the line out. A line whose data equals the pattern would never count as arrived: the
// probe's data never does (a library would need an escape for it).
constexpr int kSentinelPayload = 16;

__host__ __device__ __forceinline__ uint64_t sentinelWord(size_t w) {
  return (w + 1) * 0x9E3779B97F4A7C15ull ^ 0xA5C3F00DD00DC0DEull;
}

__global__ void sentinelFillKernel(uint64_t* p, size_t halfWords) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < 2 * halfWords;
       i += size_t(gridDim.x) * blockDim.x)
    p[i] = sentinelWord(i % halfWords);
}

inline __device__ void pushSentinelLines(const LineLane& l, const uint64_t* src, char* dst,
                                         size_t words) {
  const size_t lines = (words + kSentinelPayload - 1) / kSentinelPayload;
  l.forBatches(lines, [&](const size_t* line, const bool* active) {
    uint64_t lo[kLineBatch], hi[kLineBatch];
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = line[i] * kSentinelPayload + 2 * l.piece;
      lo[i] = wordAt(src, w, words);
      hi[i] = wordAt(src, w + 1, words);
    }
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      char* p = dst + line[i] * 128 + l.piece * 16;
      asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo[i]), "l"(hi[i])
                   : "memory");
    }
  });
}

// sentinel_push: the push alone, into the peer's chunk staging (timing only).
__global__ void sentinelPushKernel(const uint64_t* src, char* peerScratch, size_t words) {
  pushSentinelLines(LineLane(), src, peerScratch, words);
}

// sentinel_rx: push my lines into the peer's half (epoch % 2), then wait for the peer's lines
// in mine, copy them out and put the pattern back. kSplit: even warps push, odd warps receive.
template <bool kSplit>
__global__ void sentinelExchangeKernel(const uint64_t* src, char* peerLines, char* myLines,
                                       uint64_t* out, size_t words, size_t halfBytes,
                                       uint32_t* epoch, uint32_t* done) {
  LineLane l;
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(epoch);
  const size_t half = (e & 1) * halfBytes;
  const bool pusher = !kSplit || l.warp % 2 == 0, receiver = !kSplit || l.warp % 2 == 1;
  if (kSplit) {
    l.warp /= 2;
    l.nWarps /= 2;
  }
  if (pusher) pushSentinelLines(l, src, peerLines + half, words);
  const size_t lines = (words + kSentinelPayload - 1) / kSentinelPayload;
  const int groupShift = 8 * int(l.lineInGroup);
  l.forBatches(receiver ? lines : 0, [&](const size_t* line, const bool* active) {
    uint64_t lo[kLineBatch], hi[kLineBatch], slo[kLineBatch], shi[kLineBatch];
    for (int i = 0; i < kLineBatch; ++i) {
      const size_t w = line[i] * kSentinelPayload + 2 * l.piece;
      slo[i] = sentinelWord(w);
      shi[i] = sentinelWord(w + 1);
    }
    uint64_t t0 = 0;
    for (bool ready = false; !ready;) {
      ready = true;
      for (int i = 0; i < kLineBatch; ++i) {
        if (active[i]) {
          const char* p = myLines + half + line[i] * 128 + l.piece * 16;
          asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];"
                       : "=l"(lo[i]), "=l"(hi[i])
                       : "l"(p)
                       : "memory");
        }
        const unsigned in =
            __ballot_sync(0xffffffffu, !active[i] || lo[i] != slo[i] || hi[i] != shi[i]);
        ready &= ((in >> groupShift) & 0xFFu) != 0;
      }
      ready = __all_sync(0xffffffffu, ready);
      if (!ready) {
        uint64_t t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t0 == 0) t0 = t;
        if (t - t0 > 2000000000ull) __trap();  // a peer that never sends: fail, not hang
      }
    }
    for (int i = 0; i < kLineBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = line[i] * kSentinelPayload + 2 * l.piece;
      if (w < words) out[w] = lo[i];
      if (w + 1 < words) out[w + 1] = hi[i];
      char* p = myLines + half + line[i] * 128 + l.piece * 16;
      asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(slo[i]), "l"(shi[i])
                   : "memory");
    }
  });
  finishEpoch(e, epoch, done);
}

// One-shot exchange in chunks with a flag after each (chunks_rx, chunks_sum): within every
// block the first `pushWarps` warps push, the others receive. Pusher warp p stores chunks p,
// p + P, ... of its source into the peer's staging half (epoch % 2), then fences at system
// scope and stores the chunk's flag (the launch's epoch + 1) in the peer; receiver warp r waits
// for the flags of chunks r, r + R, ... in its own GPU and writes them out: the staged chunk
// (chunks_rx) or its sum with my own source, as 32-bit integers (chunks_sum). Nothing a GPU
// pushes waits on the peer, and a chunk is taken as soon as its flag is in.
// kCopy / kSum as above; kFlagsOnly: receivers wait for every flag but read no data; kNoRx:
// nobody receives (the pushers' cost alone). The last two are timed, not verified.
enum ChunkRx { kCopy, kSum, kFlagsOnly, kNoRx };
// How a pusher orders its chunk before the flag: kFenceSc: every lane __threadfence_system()
// (fence.sc.sys), __syncwarp, lane 0 a relaxed flag store; kRelease: __syncwarp, then lane 0
// st.release.sys; kNoFence: __syncwarp and a relaxed flag (unordered: timing only).
enum ChunkFence { kFenceSc, kRelease, kNoFence };
// The exchange of one launch (epoch e) run by `blocks` blocks, this one being `block`; kSysLoads:
// the staging is host memory, read past any cached copy (ld.global.cv).
template <ChunkRx kMode, ChunkFence kFence, bool kSysLoads = false>
__device__ void chunksExchange(const uint4* src, uint4* peerStage, const uint4* myStage, uint4* out,
                               size_t units, size_t chunkUnits, size_t halfUnits,
                               uint64_t* peerFlags, const uint64_t* myFlags, int pushWarps,
                               uint32_t e, size_t block, size_t blocks) {
  const uint64_t flag = e + 1;
  const size_t half = (e & 1) * halfUnits;
  const int lane = threadIdx.x % 32, warpInBlock = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  const size_t chunks = (units + chunkUnits - 1) / chunkUnits;
  if (warpInBlock < pushWarps) {
    const size_t P = blocks * pushWarps;
    for (size_t c = block * size_t(pushWarps) + warpInBlock; c < chunks; c += P) {
      const size_t u0 = c * chunkUnits;
      const size_t un = units - u0 < chunkUnits ? units - u0 : chunkUnits;
      for (size_t t0 = lane; t0 < un; t0 += 4 * 32) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (t0 + k * 32 < un) v[k] = src[u0 + t0 + k * 32];
#pragma unroll
        for (int k = 0; k < 4; ++k)
          if (t0 + k * 32 < un) peerStage[half + u0 + t0 + k * 32] = v[k];
      }
      if (kFence == kFenceSc) __threadfence_system();
      __syncwarp();
      if (lane == 0 && kFence == kRelease)
        asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(peerFlags + c), "l"(flag)
                     : "memory");
      if (lane == 0 && kFence != kRelease)
        asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(peerFlags + c), "l"(flag)
                     : "memory");
    }
  } else if (kMode != kNoRx) {
    const int rxWarps = warps - pushWarps;
    const size_t R = blocks * rxWarps;
    for (size_t c = block * size_t(rxWarps) + (warpInBlock - pushWarps); c < chunks; c += R) {
      uint64_t seen = 0, t0 = 0, t = 0;
      for (;;) {
        asm volatile("ld.acquire.sys.global.u64 %0, [%1];"
                     : "=l"(seen)
                     : "l"(myFlags + c)
                     : "memory");
        if (seen >= flag) break;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t0 == 0) t0 = t;
        if (t - t0 > 2000000000ull) __trap();  // a peer that never signals: fail, not hang
      }
      if (kMode == kFlagsOnly) continue;
      const size_t u0 = c * chunkUnits;
      const size_t un = units - u0 < chunkUnits ? units - u0 : chunkUnits;
      for (size_t t1 = lane; t1 < un; t1 += 4 * 32) {
        uint4 v[4], w[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (t1 + k * 32 >= un) continue;
          v[k] = kSysLoads ? __ldcv(myStage + half + u0 + t1 + k * 32)
                           : __ldcg(myStage + half + u0 + t1 + k * 32);
          if constexpr (kMode == kSum) w[k] = src[u0 + t1 + k * 32];
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (t1 + k * 32 >= un) continue;
          if constexpr (kMode == kSum) {
            v[k].x += w[k].x;
            v[k].y += w[k].y;
            v[k].z += w[k].z;
            v[k].w += w[k].w;
          }
          out[u0 + t1 + k * 32] = v[k];
        }
      }
    }
  }
}

template <ChunkRx kMode, ChunkFence kFence = kFenceSc>
__global__ void chunksExchangeKernel(const uint4* src, uint4* peerStage, const uint4* myStage,
                                     uint4* out, size_t units, size_t chunkUnits, size_t halfUnits,
                                     uint64_t* peerFlags, const uint64_t* myFlags, int pushWarps,
                                     uint32_t* epoch, uint32_t* done) {
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(epoch);
  chunksExchange<kMode, kFence>(src, peerStage, myStage, out, units, chunkUnits, halfUnits,
                                peerFlags, myFlags, pushWarps, e, blockIdx.x, gridDim.x);
  finishEpoch(e, epoch, done);
}

// Two paths at once (host_split): the first `hostBlocks` blocks exchange the last `hostUnits`
// units through pinned host memory over PCIe (staging and flags in host memory), the other
// blocks the first units - hostUnits over NVLink as chunks_rx does. Is PCIe a second link?
struct ChunkPath {
  uint4* peerStage;
  const uint4* myStage;
  uint64_t* peerFlags;
  const uint64_t* myFlags;
};
__global__ void splitExchangeKernel(const uint4* src, uint4* out, size_t units, size_t hostUnits,
                                    int hostBlocks, ChunkPath nvl, ChunkPath host,
                                    size_t chunkUnits, size_t hostChunkUnits, size_t halfUnits,
                                    int pushWarps, uint32_t* epoch, uint32_t* done) {
  const uint32_t e = *reinterpret_cast<volatile uint32_t*>(epoch);
  const size_t nvlUnits = units - hostUnits;
  if (int(blockIdx.x) < hostBlocks)
    chunksExchange<kCopy, kFenceSc, true>(
        src + nvlUnits, host.peerStage, host.myStage, out + nvlUnits, hostUnits, hostChunkUnits,
        halfUnits, host.peerFlags, host.myFlags, pushWarps, e, blockIdx.x, hostBlocks);
  else
    chunksExchange<kCopy, kFenceSc>(src, nvl.peerStage, nvl.myStage, out, nvlUnits, chunkUnits,
                                    halfUnits, nvl.peerFlags, nvl.myFlags, pushWarps, e,
                                    blockIdx.x - hostBlocks, gridDim.x - hostBlocks);
  finishEpoch(e, epoch, done);
}

__device__ __forceinline__ uint32_t smemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void waitParity(uint32_t bar, uint32_t parity) {
  for (uint32_t done = 0; !done;) {
    asm volatile(
        "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}

// Block b moves chunks b, b + grid, b + 2 grid, ...; its j-th chunk uses stage j % kStages, whose
// mbarrier then completes for the (j / kStages)-th time: the parity waited on. Thread 0 alone
// issues every copy; the bulk copies need no other threads.
__global__ void tmaBulkKernel(const uint8_t* src, uint8_t* dst, size_t bytes, uint32_t chunk) {
  extern __shared__ __align__(128) uint8_t stage[];
  __shared__ __align__(8) uint64_t full[kStages];
  const size_t nChunks = (bytes + chunk - 1) / chunk;
  if (threadIdx.x != 0 || blockIdx.x >= nChunks) return;
  const size_t mine = (nChunks - blockIdx.x + gridDim.x - 1) / gridDim.x;
  for (int s = 0; s < kStages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" : : "r"(smemAddr(&full[s])) : "memory");
  // Makes the initialised barriers visible to the async proxy that completes them.
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");

  auto offset = [&](size_t j) { return (blockIdx.x + j * gridDim.x) * size_t(chunk); };
  auto length = [&](size_t j) {
    const size_t left = bytes - offset(j);
    return static_cast<uint32_t>(left < chunk ? left : chunk);
  };
  auto load = [&](size_t j) {
    const uint32_t bar = smemAddr(&full[j % kStages]), len = length(j);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 :
                 : "r"(bar), "r"(len)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1], %2, [%3];"
        :
        : "r"(smemAddr(stage + (j % kStages) * chunk)), "l"(src + offset(j)), "r"(len), "r"(bar)
        : "memory");
  };

  for (size_t j = 0; j < mine && j < kStages; ++j) load(j);
  for (size_t j = 0; j < mine; ++j) {
    waitParity(smemAddr(&full[j % kStages]), (j / kStages) & 1);
    // Conservative: orders the completed load before the store that reads the same bytes.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :
                 : "l"(dst + offset(j)), "r"(smemAddr(stage + (j % kStages) * chunk)),
                   "r"(length(j))
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // Refill chunk j - 1's stage once its store has read it; chunk j's store stays in flight.
    if (j >= 1 && j - 1 + kStages < mine) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(j - 1 + kStages);
    }
  }
  // Every store complete (not only read out of shared memory) before the block exits.
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

}  // namespace nvlink_probe
