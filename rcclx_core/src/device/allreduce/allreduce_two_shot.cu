// The two-shot push allreduce kernel shared by dda_tree (few blocks, one round when the message
// fits the staging) and dda_large (many blocks, pipelined rounds); plan.cpp shapes it.
//
// The units are split into nranks segments; rank s reduces segment s. Block b of a grid of G
// handles, in round k, units [(k*G + b)*C, +C) of every segment (C = chunk units):
//   1. reduce-scatter: for each peer p, store my units of segment p into p's RS area [me]
//      (plain stores over NVLink), then release-signal p's RS flag [me][b][slot];
//   2. wait for the RS flags of all peers, reduce segment `me` in rank order (my input and the
//      peers' staged units), write the result to my output and into every peer's AG area [me],
//      then release-signal their AG flags;
//   3. wait for the AG flags of all peers and copy their results into my output.
// Staggered start (dda_tree, one round): blocks [0, X) start at once and the others wait until
// a block of [0, X) has issued its step 1 (a local flag). Started together, every block would
// finish step 1 at about the same time and turn together (release fence, flag trip, wait)
// while the link idles; staggered, the first blocks turn while the others' data is on the link.
// Zero-copy (the outputs in a symmetric buffer, at the same offset on every rank): step 2 stores
// the result straight into every peer's output and step 3 only waits. A peer writes my output
// only after my reduce-scatter data of the same call reached it, so never before I entered the
// call; in place (send == recv) it overwrites input units I sent in step 1, whose loads had
// completed once they arrived.
// Each element is reduced by exactly one rank, so every rank ends with the same bits. PREMUL_SUM
// scales the input wherever it is loaded (steps 1 and 2), so peers receive it scaled.
//
// Reuse: round k uses slot k % S of the block's area (S = 2 when there are several rounds).
// A peer stores round k + 2 into a slot only after it got my round k + 1 RS flag, which I send
// after finishing round k; so two slots suffice with no extra acknowledgement. Flag values are
// (epoch << 32) | (k + 1): they grow in every flag, so waits test ">=".
#include "ctran/gpu_runtime.hpp"
#include "device/allreduce/kernel_common.cuh"

namespace rcclx::gpu {
namespace {

struct TwoShotArgs {
  Buffers buf;
  ctran::DeviceWindowHandle win;
  size_t halfBytes;
  size_t rawOffset;
  size_t segUnits;    ///< units per segment (the last may be shorter)
  size_t chunkUnits;  ///< C: units per block, segment and round
  int slots;          ///< S: 1 (single round) or 2
  int staggerBlocks;  ///< X: see TwoShotShape::staggerBlocks
  ctran::WaitBound bound;
  bool zeroCopy;                           ///< the all-gather stores into peerRecv
  char* peerRecv[ctran::kMaxDeviceRanks];  ///< every rank's output (zero-copy only)
};

/// Units a thread moves per batch: loads issued together before their stores.
constexpr int kBatch = 4;
/// Units a thread reduces per batch.
constexpr int kReduceBatch = 2;

template <typename T, Op O>
__global__ void __launch_bounds__(kMaxThreads) twoShotKernel(TwoShotArgs a) {
  awaitPrecedingKernel(a.buf.pdlOneAhead);
  using ctran::device::signalRelease;
  using ctran::device::signalWait;
  const ctran::DeviceWindowHandle& h = a.win;
  const uint32_t epoch = ctran::device::epochLoad(h);
  const int half = static_cast<int>(epoch & 1u);
  const int me = h.rank;
  const int n = h.nranks;
  const int b = blockIdx.x;
  const int G = gridDim.x;
  const int tid = threadIdx.x;
  const int nthr = blockDim.x;
  const size_t C = a.chunkUnits;
  const size_t U = a.buf.units;
  const size_t areaUnits = 2 * static_cast<size_t>(n) * C;

  for (uint32_t k = 0;; ++k) {
    const size_t j0 = (static_cast<size_t>(k) * G + b) * C;
    if (j0 >= a.segUnits) break;
    const size_t jn = a.segUnits - j0 < C ? a.segUnits - j0 : C;
    const int slot = static_cast<int>(k % static_cast<uint32_t>(a.slots));
    const uint64_t flag = (static_cast<uint64_t>(epoch) << 32) | (k + 1);
    const size_t areaOffset = static_cast<size_t>(b * a.slots + slot) * areaUnits;
    auto area = [&](int q) {
      return reinterpret_cast<uint4*>(h.data[q] + static_cast<size_t>(half) * a.halfBytes +
                                      a.rawOffset) +
             areaOffset;
    };

    // 0. Staggered start (one round): block b >= X waits until block (b - X) % X has issued
    //    its reduce-scatter, so the link carries the first X blocks' data first and their turn
    //    (fence, flag, wait) overlaps the other blocks' reduce-scatter. The flag is my own slot
    //    for myself in the reduce-scatter flags, which no peer writes; it only orders timing.
    const int X = a.staggerBlocks;
    if (X > 0 && b >= X) {
      if (tid == 0)
        signalWait(h.signals[me] + signalIndex(half, kReduceScatter, me, (b - X) % X, slot), flag,
                   me, me, a.bound, "staggered start");
      __syncthreads();
    }
    // 1. Reduce-scatter: my share of segment p to rank p.
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      uint4* dst = area(p) + static_cast<size_t>(me) * C;
      const size_t base = static_cast<size_t>(p) * a.segUnits + j0;
      for (size_t t0 = tid; t0 < jn; t0 += kBatch * nthr) {
        uint4 v[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const size_t t = t0 + static_cast<size_t>(i) * nthr;
          if (t < jn && base + t < U)
            v[i] = loadOwn<T, O>(a.buf.send, base + t, a.buf.count, a.buf.aligned, a.buf.scale);
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const size_t t = t0 + static_cast<size_t>(i) * nthr;
          if (t < jn && base + t < U) dst[t] = v[i];
        }
      }
    }
    __syncthreads();
    if (X > 0 && b < X && tid == 0)  // issued (not arrived): a relaxed store suffices
      *reinterpret_cast<volatile uint64_t*>(h.signals[me] +
                                            signalIndex(half, kReduceScatter, me, b, slot)) = flag;
    if (tid < n && tid != me) {
      signalRelease(h.signals[tid] + signalIndex(half, kReduceScatter, me, b, slot), flag);
      signalWait(h.signals[me] + signalIndex(half, kReduceScatter, tid, b, slot), flag, me, tid,
                 a.bound, "reduce-scatter data");
    }
    __syncthreads();

    // 2. Reduce my segment in rank order, kReduceBatch units per thread at a time (their loads
    //    in flight together); keep the result and send it to every peer.
    const uint4* mine = area(me);
    const size_t base = static_cast<size_t>(me) * a.segUnits + j0;
    for (size_t t0 = tid; t0 < jn; t0 += kReduceBatch * nthr) {
      bool valid[kReduceBatch];
#pragma unroll
      for (int i = 0; i < kReduceBatch; ++i) {
        const size_t t = t0 + static_cast<size_t>(i) * nthr;
        valid[i] = t < jn && base + t < U;
      }
      // Rank q's units of the batch: my input or its staged contribution.
      auto operand = [&](int q, uint4(&v)[kReduceBatch]) {
#pragma unroll
        for (int i = 0; i < kReduceBatch; ++i) {
          const size_t t = t0 + static_cast<size_t>(i) * nthr;
          if (valid[i]) {
            v[i] = q == me ? loadOwn<T, O>(a.buf.send, base + t, a.buf.count, a.buf.aligned,
                                           a.buf.scale)
                           : loadStaged(mine + static_cast<size_t>(q) * C + t);
          }
        }
      };
      uint4 res[kReduceBatch];
      if (n == 2) {
        uint4 v0[kReduceBatch], v1[kReduceBatch];
        operand(0, v0);
        operand(1, v1);
#pragma unroll
        for (int i = 0; i < kReduceBatch; ++i)
          if (valid[i]) res[i] = reducePair<T, O>(v0[i], v1[i], a.buf.avgDivisor);
      } else {
        UnitReducer<T, O> r[kReduceBatch];
        for (int q = 0; q < n; ++q) {
          uint4 v[kReduceBatch];
          operand(q, v);
#pragma unroll
          for (int i = 0; i < kReduceBatch; ++i) {
            if (!valid[i]) continue;
            if (q == 0) {
              r[i].first(v[i]);
            } else {
              r[i].add(v[i]);
            }
          }
        }
#pragma unroll
        for (int i = 0; i < kReduceBatch; ++i)
          if (valid[i]) res[i] = r[i].result(a.buf.avgDivisor);
      }
#pragma unroll
      for (int i = 0; i < kReduceBatch; ++i) {
        if (!valid[i]) continue;
        const size_t t = t0 + static_cast<size_t>(i) * nthr;
        storeUnit<T>(a.buf.recv, base + t, a.buf.count, a.buf.aligned, res[i]);
        for (int p = 0; p < n; ++p) {
          if (p == me) continue;
          if (a.zeroCopy) {
            storeUnit<T>(a.peerRecv[p], base + t, a.buf.count, a.buf.aligned, res[i]);
          } else {
            area(p)[static_cast<size_t>(n + me) * C + t] = res[i];
          }
        }
      }
    }
    __syncthreads();
    if (tid < n && tid != me) {
      signalRelease(h.signals[tid] + signalIndex(half, kAllGather, me, b, slot), flag);
      signalWait(h.signals[me] + signalIndex(half, kAllGather, tid, b, slot), flag, me, tid,
                 a.bound, "all-gather data");
    }
    __syncthreads();

    // 3. All-gather: the peers' results into my output (zero-copy: already there).
    for (int q = 0; q < n && !a.zeroCopy; ++q) {
      if (q == me) continue;
      const uint4* src = mine + static_cast<size_t>(n + q) * C;
      const size_t qbase = static_cast<size_t>(q) * a.segUnits + j0;
      for (size_t t0 = tid; t0 < jn; t0 += kBatch * nthr) {
        uint4 v[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const size_t t = t0 + static_cast<size_t>(i) * nthr;
          if (t < jn && qbase + t < U) v[i] = loadStaged(src + t);
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const size_t t = t0 + static_cast<size_t>(i) * nthr;
          if (t < jn && qbase + t < U)
            storeUnit<T>(a.buf.recv, qbase + t, a.buf.count, a.buf.aligned, v[i]);
        }
      }
    }
  }
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchTwoShot(const LaunchArgs& args, const TwoShotShape& shape, bool zeroCopy,
                   const char* what) {
  CTRAN_CHECK(shape.chunkUnits > 0 && shape.blocks > 0 && shape.blocks <= kMaxBlocks &&
                  (shape.slots == 1 || shape.slots == 2),
              ctran::InvalidArgument, what, ": no launch shape fits (", shape.blocks,
              " blocks, chunk ", shape.chunkUnits, " units, ", shape.slots, " slots, staging ",
              args.layout.rawBytes, " bytes)");
  CTRAN_CHECK(shape.staggerBlocks == 0 || (shape.slots == 1 && shape.staggerBlocks < shape.blocks),
              ctran::InvalidArgument, what, ": a staggered start (", shape.staggerBlocks,
              " blocks first) needs one round and more blocks (", shape.slots, " slots, ",
              shape.blocks, " blocks)");
  CTRAN_CHECK(shape.chunkUnits <= twoShotMaxChunkUnits(args.layout.rawBytes, args.window.nranks,
                                                       shape.blocks, shape.slots),
              ctran::InvalidArgument, what, ": chunk of ", shape.chunkUnits, " units x ",
              shape.blocks, " blocks x ", shape.slots, " slots exceeds the staging of ",
              args.layout.rawBytes, " bytes");
  TwoShotArgs a;
  a.buf = buffersOf(args);
  a.win = args.window;
  a.halfBytes = args.layout.halfBytes;
  a.rawOffset = args.layout.rawOffset;
  a.segUnits = shape.segUnits;
  a.chunkUnits = shape.chunkUnits;
  a.slots = shape.slots;
  a.staggerBlocks = shape.staggerBlocks;
  a.bound = args.bound;
  CTRAN_ASSERT(!zeroCopy || args.symmetricOutput(), "zero-copy ", what, " without mapped outputs");
  a.zeroCopy = zeroCopy;
  for (int r = 0; r < ctran::kMaxDeviceRanks; ++r) a.peerRecv[r] = args.peerRecv[r];
  dispatch(args.type, args.op, [&](auto t, auto o) {
    using T = decltype(t);
    ctran::launchKernel(
        twoShotKernel<T, decltype(o)::value>,
        {shape.blocks, shape.threads, args.stream, args.pdl, args.keepSharedMemoryFree}, a);
  });
  checkLaunch(what, shape.blocks, shape.threads);
}

int twoShotThreadsPerSm() {
  return ctran::gpuBlocksPerSm(twoShotKernel<float, Op::kSum>, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
