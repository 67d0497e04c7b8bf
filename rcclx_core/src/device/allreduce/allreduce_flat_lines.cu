// dda_flat on GPU buffers, in 128-byte lines (the protocol: lines.cuh), for medium messages:
// the one-shot of allreduce_flat_ll.cu with 1/16 of flag bytes instead of LL's half.
//
// Every rank stores its whole input, as lines, into every peer's slot for it, then reduces
// locally: each word from every rank in rank order (its own from its input, the peers' from
// its slots, polled until their flags show this epoch) into its output. Nothing a rank sends
// waits on a peer, so the link carries one uninterrupted stream per direction; with two ranks
// that is as many bytes as the reduce-scatter plus all-gather of dda_tree, without the turn
// between the phases. Warp w handles the same line groups in both steps, so in place is safe: a
// word of my output is written only by the warp that already read it. The region of parity
// half e % 2 is reused by call e + 2, by which time every peer has finished call e.
// The batch loops repeat allreduce_tree_lines.cu's on purpose: as shared helpers they changed the
// register allocation (more registers, int8 spills) and both kernels ran 2-4% slower.
#include "ctran/gpu_runtime.hpp"
#include "device/allreduce/lines.cuh"

namespace rcclx::gpu {
namespace {

using namespace lines;

struct FlatLinesArgs {
  Buffers buf;
  ctran::DeviceWindowHandle win;
  size_t halfBytes;
  size_t linesOffset;
  size_t sourceBytes;  ///< bytes of one source's lines in a rank's line region
  size_t words;        ///< 8-byte words of the message
  bool aligned8;       ///< send and recv are 8-byte aligned
  ctran::WaitBound bound;
};

template <typename T, Op O>
__global__ void __launch_bounds__(kMaxThreads) flatLinesKernel(FlatLinesArgs a) {
  awaitPrecedingKernel(a.buf.pdlOneAhead);
  using V = uint2;  // one 8-byte word
  const ctran::DeviceWindowHandle& h = a.win;
  const uint32_t epoch = ctran::device::epochLoad(h);
  const uint64_t flag = epoch;
  const int me = h.rank;
  const int n = h.nranks;
  const Lane lane;
  const bool flagLane = lane.flagLane;
  // Rank r's slot for source q, already offset to this lane's piece.
  const size_t region =
      (epoch & 1u) * a.halfBytes + a.linesOffset + static_cast<size_t>(lane.piece) * 16;
  auto slot = [&](int r, int q) { return h.data[r] + region + q * a.sourceBytes; };
  const size_t lines = (a.words + kLinePayloadWords - 1) / kLinePayloadWords;
  auto loadWord = [&](size_t w) {
    return asWord(loadOwn<T, O, V>(a.buf.send, w, a.buf.count, a.aligned8, a.buf.scale));
  };

  // 1. Push: my words, as lines, into every peer's slot [me].
  lane.forBatches(lines, [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
    uint64_t lo[kBatch], hi[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = lane.wordOf(0, line[i]);
      lo[i] = loadWord(w);
      hi[i] = flagLane ? flag : loadWord(w + 1);
    }
    for (int d = 1; d < n; ++d) {
      char* dst = slot((me + d) % n, me);
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (active[i]) lineStore(dst + line[i] * kLineBytes, lo[i], hi[i]);
      }
    }
  });

  // 2. Reduce: every rank's words in rank order, into my output.
  lane.forBatches(lines, [&](const size_t (&line)[kBatch], const bool (&active)[kBatch]) {
    uint64_t own0[kBatch], own1[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      own0[i] = own1[i] = 0;
      if (!active[i]) continue;
      own0[i] = loadWord(lane.wordOf(0, line[i]));
      if (!flagLane) own1[i] = loadWord(lane.wordOf(0, line[i]) + 1);
    }
    // Rank q's words of the batch: mine, or the peer's lines once they carry the flag.
    auto operand = [&](int q, uint64_t (&lo)[kBatch], uint64_t (&hi)[kBatch]) {
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        lo[i] = own0[i];
        hi[i] = own1[i];
      }
      if (q != me) waitLines(slot(me, q), line, active, flagLane, flag, lo, hi, me, q, a.bound);
    };
    // Combined in rank order, ranks 0 and 1 both fetched before either is combined: on rank 0
    // the poll of rank 1's lines then goes out while my own loads are still in flight. (Line
    // kernels run on two ranks or more: the plan gives them no other.)
    uint2 res0[kBatch], res1[kBatch];
    {
      uint64_t lo0[kBatch], hi0[kBatch], lo1[kBatch], hi1[kBatch];
      operand(0, lo0, hi0);
      operand(1, lo1, hi1);
      if (n == 2) {
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          res0[i] = reducePair<T, O, V>(fromWord(lo0[i]), fromWord(lo1[i]), a.buf.avgDivisor);
          res1[i] = reducePair<T, O, V>(fromWord(hi0[i]), fromWord(hi1[i]), a.buf.avgDivisor);
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
          res0[i] = r0[i].result(a.buf.avgDivisor);
          res1[i] = r1[i].result(a.buf.avgDivisor);
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (!active[i]) continue;
      const size_t w = lane.wordOf(0, line[i]);
      if (w < a.words) storeUnit<T, V>(a.buf.recv, w, a.buf.count, a.aligned8, res0[i]);
      if (!flagLane && w + 1 < a.words)
        storeUnit<T, V>(a.buf.recv, w + 1, a.buf.count, a.aligned8, res1[i]);
    }
  });
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchFlatLines(const LaunchArgs& args, const LaunchShape& shape) {
  const size_t bytes = args.count * dataTypeSize(args.type);
  const size_t lines = messageLines(bytes);
  CTRAN_CHECK(lines * kLineBytes <= 2 * args.layout.linesSlotBytes, ctran::InvalidArgument,
              "dda_flat: ", bytes,
              " bytes exceed the line staging (RCCLX_GPU_LINES_BYTES=", args.layout.linesMaxBytes,
              ")");
  FlatLinesArgs a;
  a.buf = buffersOf(args);
  a.win = args.window;
  a.halfBytes = args.layout.halfBytes;
  a.linesOffset = args.layout.linesOffset;
  a.sourceBytes = lines * kLineBytes;
  a.words = (bytes + kWordBytes - 1) / kWordBytes;
  a.aligned8 = ((reinterpret_cast<uintptr_t>(args.send) | reinterpret_cast<uintptr_t>(args.recv)) %
                kWordBytes) == 0;
  a.bound = args.bound;
  dispatch(args.type, args.op, [&](auto t, auto o) {
    using T = decltype(t);
    ctran::launchKernel(
        flatLinesKernel<T, decltype(o)::value>,
        {shape.blocks, shape.threads, args.stream, args.pdl, args.keepSharedMemoryFree}, a);
  });
  checkLaunch("dda_flat (lines)", shape.blocks, shape.threads);
}

int flatLinesThreadsPerSm() {
  return ctran::gpuBlocksPerSm(flatLinesKernel<float, Op::kSum>, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
