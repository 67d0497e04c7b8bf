// Low-precision all_gather, reduce_scatter and all_to_all on GPU buffers: one quantization
// each, one kernel. The same arithmetic as lp_all_gather.cpp, lp_reduce_scatter.cpp and
// lp_all_to_all.cpp: every segment's blocks start at the segment's first element, this rank's
// own segment passes through the quantizer too, except in reduce_scatter, which sums the peers'
// decoded segments and its own input exactly in rank order in float32.
//
// Each segment is cut into chunks of chunkBlocks quantizer blocks; grid block b handles chunk
// j = k * G + b of every segment in round k:
//   1. quantize chunk j of segment p into rank p's chunk [me] (all_gather: one segment, encoded
//      once and stored to every rank), then exchange flags;
//   2. decode chunk j of what each rank q sent into its place in the output (all_gather,
//      all_to_all), or sum the n decoded chunks into the output (reduce_scatter);
//   3. acknowledge round k to every peer: a rank overwrites a round slot (round k + 2) only
//      after the receiver acknowledged round k.
// In place works: block b writes only output chunks whose input chunks it has read.
#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "device/lp/lp_gpu_common.cuh"

namespace rcclx::lp {
namespace {

using device::ChunkRef;

/// Phases (indices into the signal layout): data flags and acknowledgements.
constexpr int kData = kLpPhaseA;
constexpr int kAck = kLpPhaseB;

template <bool kBf16>
__global__ void __launch_bounds__(kLpThreads, 2) lpExchangeKernel(LpExchangeArgs a) {
  const LpStaging& st = a.staging;
  const ctran::DeviceWindowHandle& h = st.window;
  const uint32_t epoch = ctran::device::epochLoad(h);
  const int half = static_cast<int>(epoch & 1u);
  const int me = h.rank;
  const int n = h.nranks;
  const int b = static_cast<int>(blockIdx.x);
  const int tid = static_cast<int>(threadIdx.x);
  const size_t tile = threadIdx.x / device::kTile;
  const size_t tiles = blockDim.x / device::kTile;
  const size_t B = static_cast<size_t>(a.blockElems);
  const size_t C = st.chunkBlocks;
  const size_t elem = kBf16 ? 2 : 4;
  auto blocksOf = [&](size_t count) { return (count + B - 1) / B; };
  auto blockLen = [&](size_t count, size_t g) {
    return static_cast<long long>(count - g * B < B ? count - g * B : B);
  };

  for (uint32_t k = 0;; ++k) {
    const size_t j = static_cast<size_t>(k) * gridDim.x + b;
    if (j * C >= a.maxBlocks) break;
    const int slot = static_cast<int>(k % static_cast<uint32_t>(st.slots));
    const uint64_t flag = device::roundFlag(epoch, k);
    if (k >= static_cast<uint32_t>(st.slots)) {
      // The peers must have consumed round k - slots from this slot.
      if (tid < n && tid != me) {
        ctran::device::signalWait(h.signals[me] + lpSignalIndex(half, kAck, tid, b, slot),
                                  device::roundFlag(epoch, k - st.slots), me, tid, st.bound,
                                  "a low-precision acknowledgement");
      }
      __syncthreads();
    }

    // 1. Quantize.
    const int segments = a.sameSegment ? 1 : n;
    for (int p = 0; p < segments; ++p) {
      ChunkRef dsts[kLpMaxRanks];
      int ndst = 0;
      for (int q = 0; q < n; ++q) {
        // A reduction sums this rank's own segment from its input.
        if (a.sameSegment || (q == p && !(a.reduce && q == me)))
          dsts[ndst++] = device::stagedChunk(st, q, half, b, slot, kData, me);
      }
      if (ndst == 0) continue;
      const auto span = device::chunkSpan(blocksOf(a.sendCount[p]), j, C);
      for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
        const size_t g = span.lo + i;
        const device::InputSource<kBf16> src{
            static_cast<const char*>(a.send) + (a.sendOffset[p] + g * B) * elem,
            blockLen(a.sendCount[p], g)};
        device::tileEncode(src, a.blockElems, dsts, ndst, i);
      }
    }
    device::exchangeFlags(h, half, kData, slot, flag, st.bound, "low-precision data");

    // 2. Decode.
    if (a.reduce) {
      ChunkRef srcs[kLpMaxRanks];
      for (int q = 0; q < n; ++q) srcs[q] = device::stagedChunk(st, me, half, b, slot, kData, q);
      const size_t count = a.recvCount[me];
      const auto span = device::chunkSpan(blocksOf(count), j, C);
      for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
        const size_t g = span.lo + i;
        const device::StagedSumSource<kBf16> src{
            srcs,
            n,
            me,
            static_cast<const char*>(a.send) + (a.sendOffset[me] + g * B) * elem,
            blockLen(count, g),
            i,
            a.blockElems,
            a.average};
        device::tileStore<kBf16>(src, a.blockElems, static_cast<char*>(a.recv) + g * B * elem,
                                 blockLen(count, g));
      }
    } else {
      for (int q = 0; q < n; ++q) {
        const ChunkRef c = device::stagedChunk(st, me, half, b, slot, kData, q);
        const auto span = device::chunkSpan(blocksOf(a.recvCount[q]), j, C);
        for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
          const size_t g = span.lo + i;
          device::tileDecode<kBf16>(c, i, a.blockElems,
                                    static_cast<char*>(a.recv) + (a.recvOffset[q] + g * B) * elem,
                                    blockLen(a.recvCount[q], g));
        }
      }
    }

    // 3. Acknowledge.
    __syncthreads();
    if (tid < n && tid != me) {
      ctran::device::signalRelease(h.signals[tid] + lpSignalIndex(half, kAck, me, b, slot), flag);
    }
  }
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchLpExchange(const LpExchangeArgs& args, void* stream) {
  const LpStaging& s = args.staging;
  const ctran::KernelLaunch launch{s.blocks, s.threads, stream, false, s.keepSharedMemoryFree};
  if (args.bf16) {
    ctran::launchKernel(lpExchangeKernel<true>, launch, args);
  } else {
    ctran::launchKernel(lpExchangeKernel<false>, launch, args);
  }
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching a low-precision exchange (", s.blocks, " blocks x ",
                  s.threads, " threads)");
}

int lpExchangeThreadsPerSm() {
  return ctran::gpuBlocksPerSm(lpExchangeKernel<false>, kLpThreads) * kLpThreads;
}

}  // namespace rcclx::lp
