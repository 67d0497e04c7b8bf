// dda_tree on GPU buffers, in lines (the protocol: lines.cuh): reduce-scatter then all-gather
// where every 128-byte line carries its own flag, so neither phase waits for a release fence or
// a flag round trip and each warp streams its share through both phases without a block-wide
// barrier.
//
// The message is split into nranks segments of 8-byte words; rank s reduces segment s. Warp w
// handles line groups w, w + W, ... of each segment:
//   1. reduce-scatter: my words of segment p, as lines, into p's RS slot [me];
//   2. reduce: for my segment, my own words, then each peer's line in rank order (waiting for
//      its flag), combined in rank order; the result goes to my output and, as lines, into
//      every peer's AG slot [me];
//   3. all-gather: each peer's AG lines (waiting for their flags) into my output.
// The line region of parity half e % 2 is reused by call e + 2, by which time every peer has
// finished call e. In place is safe: a word of my output is written only after the word was
// read (the result depends on it causally).
#include "ctran/gpu_runtime.hpp"
#include "device/allreduce/lines.cuh"

namespace rcclx::gpu {
namespace {

struct TreeLinesArgs {
  Buffers buf;
  ctran::DeviceWindowHandle win;
  size_t halfBytes;
  size_t linesOffset;
  size_t slotBytes;
  size_t words;     ///< 8-byte words of the message
  size_t segWords;  ///< words per segment (the last may be shorter)
  bool aligned8;    ///< send and recv are 8-byte aligned
  ctran::WaitBound bound;
};

using namespace lines;

template <typename T, Op O>
__global__ void __launch_bounds__(kMaxThreads) treeLinesKernel(TreeLinesArgs a) {
  awaitPrecedingKernel(a.buf.pdlOneAhead);
  using V = uint2;  // one 8-byte word
  const ctran::DeviceWindowHandle& h = a.win;
  const uint32_t epoch = ctran::device::epochLoad(h);
  const uint64_t flag = epoch;
  const int me = h.rank;
  const int n = h.nranks;
  const Lane lane;
  const bool flagLane = lane.flagLane;
  // Slot of source rank q in phase `phase` (0: reduce-scatter, 1: all-gather) of rank r,
  // already offset to this lane's piece.
  const size_t region =
      (epoch & 1u) * a.halfBytes + a.linesOffset + static_cast<size_t>(lane.piece) * 16;
  auto slot = [&](int r, int phase, int q) {
    return h.data[r] + region + (static_cast<size_t>(phase) * n + q) * a.slotBytes;
  };
  auto segBegin = [&](int s) { return static_cast<size_t>(s) * a.segWords; };
  auto segLen = [&](int s) {
    const size_t b = segBegin(s);
    return b >= a.words ? size_t{0} : (a.words - b < a.segWords ? a.words - b : a.segWords);
  };
  auto linesOf = [](size_t len) { return (len + kLinePayloadWords - 1) / kLinePayloadWords; };
  auto loadWord = [&](size_t w) {
    return asWord(loadOwn<T, O, V>(a.buf.send, w, a.buf.count, a.aligned8, a.buf.scale));
  };
  auto storeWord = [&](size_t w, uint64_t v) {
    storeUnit<T, V>(a.buf.recv, w, a.buf.count, a.aligned8, fromWord(v));
  };
  auto wordOf = [&](int s, size_t line) { return lane.wordOf(segBegin(s), line); };

  // Step 2's own words of this warp are fetched into L2 now, while step 1 runs: step 2 then
  // waits on L2, not on HBM, before its first add.
  const size_t myLen = segLen(me);
  lane.forBatches(linesOf(myLen), [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const size_t w = wordOf(me, line[i]);
      if (active[i] && w < a.words)
        prefetchL2(static_cast<const char*>(a.buf.send) + w * kWordBytes);
    }
  });

  // 1. Reduce-scatter: my words of segment p to rank p.
  for (int d = 1; d < n; ++d) {
    const int p = (me + d) % n;
    char* dst = slot(p, 0, me);
    lane.forBatches(linesOf(segLen(p)),
                    [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
                      uint64_t lo[kBatch], hi[kBatch];
#pragma unroll
                      for (int i = 0; i < kBatch; ++i) {
                        if (!active[i]) continue;
                        lo[i] = loadWord(wordOf(p, line[i]));
                        hi[i] = flagLane ? flag : loadWord(wordOf(p, line[i]) + 1);
                      }
#pragma unroll
                      for (int i = 0; i < kBatch; ++i) {
                        if (active[i]) lineStore(dst + line[i] * kLineBytes, lo[i], hi[i]);
                      }
                    });
  }

  // 2. Reduce my segment in rank order; the result to my output and to every peer.
  lane.forBatches(linesOf(myLen), [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
    uint64_t own0[kBatch], own1[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      own0[i] = own1[i] = 0;
      if (!active[i]) continue;
      own0[i] = loadWord(wordOf(me, line[i]));
      if (!flagLane) own1[i] = loadWord(wordOf(me, line[i]) + 1);
    }
    // Rank q's words of the batch: mine, or the peer's lines once they carry the flag.
    auto operand = [&](int q, uint64_t (&lo)[kBatch], uint64_t (&hi)[kBatch]) {
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        lo[i] = own0[i];
        hi[i] = own1[i];
      }
      if (q != me) waitLines(slot(me, 0, q), line, active, flagLane, flag, lo, hi, me, q, a.bound);
    };
    // Combined in rank order, ranks 0 and 1 both fetched before either is combined: on rank 0
    // the poll of rank 1's lines then goes out while my own loads are still in flight. (Line
    // kernels run on two ranks or more: the plan gives them no other.)
    uint64_t res0[kBatch], res1[kBatch];
    {
      uint64_t lo0[kBatch], hi0[kBatch], lo1[kBatch], hi1[kBatch];
      operand(0, lo0, hi0);
      operand(1, lo1, hi1);
      if (n == 2) {
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          res0[i] =
              asWord(reducePair<T, O, V>(fromWord(lo0[i]), fromWord(lo1[i]), a.buf.avgDivisor));
          res1[i] =
              asWord(reducePair<T, O, V>(fromWord(hi0[i]), fromWord(hi1[i]), a.buf.avgDivisor));
        }
      } else {
        UnitReducer<T, O, V> r0[kBatch], r1[kBatch];
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          r0[i].first(fromWord(lo0[i]));
          r1[i].first(fromWord(hi0[i]));
          r0[i].add(fromWord(lo1[i]));
          r1[i].add(fromWord(hi1[i]));
        }
        for (int q = 2; q < n; ++q) {
          uint64_t lo[kBatch], hi[kBatch];
          operand(q, lo, hi);
#pragma unroll
          for (int i = 0; i < kBatch; ++i) {
            r0[i].add(fromWord(lo[i]));
            r1[i].add(fromWord(hi[i]));
          }
        }
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          res0[i] = asWord(r0[i].result(a.buf.avgDivisor));
          res1[i] = asWord(r1[i].result(a.buf.avgDivisor));
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (!active[i]) continue;
      if (flagLane) res1[i] = flag;
      for (int d = 1; d < n; ++d)
        lineStore(slot((me + d) % n, 1, me) + line[i] * kLineBytes, res0[i], res1[i]);
      const size_t w = wordOf(me, line[i]);
      if (w - segBegin(me) < myLen) storeWord(w, res0[i]);
      if (!flagLane && w + 1 - segBegin(me) < myLen) storeWord(w + 1, res1[i]);
    }
  });

  // 3. All-gather: the peers' results into my output.
  for (int d = 1; d < n; ++d) {
    const int q = (me + n - d) % n;
    const size_t len = segLen(q);
    const char* src = slot(me, 1, q);
    lane.forBatches(linesOf(len), [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
      uint64_t lo[kBatch], hi[kBatch];
      waitLines(src, line, active, flagLane, flag, lo, hi, me, q, a.bound);
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (!active[i]) continue;
        const size_t w = wordOf(q, line[i]);
        if (w - segBegin(q) < len) storeWord(w, lo[i]);
        if (!flagLane && w + 1 - segBegin(q) < len) storeWord(w + 1, hi[i]);
      }
    });
  }
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchTreeLines(const LaunchArgs& args, const LaunchShape& shape) {
  const size_t bytes = args.count * dataTypeSize(args.type);
  const size_t n = static_cast<size_t>(args.window.nranks);
  const size_t lines = linesPerSegment(bytes, args.window.nranks);
  CTRAN_CHECK(lines * kLineBytes <= args.layout.linesSlotBytes, ctran::InvalidArgument,
              "dda_tree: ", bytes, " bytes exceed the line staging for ", args.layout.linesMaxBytes,
              " bytes (RCCLX_GPU_LINES_BYTES)");
  TreeLinesArgs a;
  a.buf = buffersOf(args);
  a.win = args.window;
  a.halfBytes = args.layout.halfBytes;
  a.linesOffset = args.layout.linesOffset;
  a.slotBytes = args.layout.linesSlotBytes;
  a.words = (bytes + kWordBytes - 1) / kWordBytes;
  a.segWords = (a.words + n - 1) / n;
  a.aligned8 = ((reinterpret_cast<uintptr_t>(args.send) | reinterpret_cast<uintptr_t>(args.recv)) %
                kWordBytes) == 0;
  a.bound = args.bound;
  dispatch(args.type, args.op, [&](auto t, auto o) {
    using T = decltype(t);
    ctran::launchKernel(
        treeLinesKernel<T, decltype(o)::value>,
        {shape.blocks, shape.threads, args.stream, args.pdl, args.keepSharedMemoryFree}, a);
  });
  checkLaunch("dda_tree (lines)", shape.blocks, shape.threads);
}

int treeLinesThreadsPerSm() {
  return ctran::gpuBlocksPerSm(treeLinesKernel<float, Op::kSum>, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
