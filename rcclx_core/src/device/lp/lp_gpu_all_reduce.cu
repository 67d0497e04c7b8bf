// Low-precision allreduce on GPU buffers, one fused kernel: quantize -> reduce-scatter ->
// requantize -> all-gather -> dequantize, the same arithmetic as lp_all_reduce.cpp.
//
// The buffer's quantizer blocks are split into nranks shards (shard p: blocks
// [nb * p / n, nb * (p + 1) / n), as on the CPU); shards are cut into chunks of chunkBlocks
// blocks, and grid block b handles chunk j = k * G + b of every shard in round k:
//   1. quantize chunk j of every peer's shard p into rank p's reduce-scatter chunk [me], then
//      exchange flags;
//   2. sum chunk j of my shard over the n - 1 staged copies and my own input, read exactly, in
//      rank order (float32; / n for AVG), requantize it into every peer's all-gather chunk
//      [me] and decode those very codes into my output, exchange flags;
//   3. decode chunk j of every peer's shard from my all-gather chunks into the output.
// Each shard is summed by one rank and every rank decodes the same bytes, so all ranks end with
// the same bits. One round slot suffices: a peer writes my reduce-scatter chunk of round k + 1
// after my all-gather flag of round k, which I send after summing round k, and my all-gather
// chunk of round k + 1 after my reduce-scatter flag of round k + 1, which I send after decoding
// round k.
#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "device/lp/lp_gpu_common.cuh"

namespace rcclx::lp {
namespace {

using device::ChunkRef;

template <bool kBf16>
__global__ void __launch_bounds__(kLpThreads, 2) lpAllReduceKernel(LpAllReduceArgs a) {
  const LpStaging& st = a.staging;
  const ctran::DeviceWindowHandle& h = st.window;
  const uint32_t epoch = ctran::device::epochLoad(h);
  const int half = static_cast<int>(epoch & 1u);
  const int me = h.rank;
  const int n = h.nranks;
  const int b = static_cast<int>(blockIdx.x);
  const size_t tile = threadIdx.x / device::kTile;
  const size_t tiles = blockDim.x / device::kTile;
  const size_t B = static_cast<size_t>(a.blockElems);
  const size_t C = st.chunkBlocks;
  const size_t elem = kBf16 ? 2 : 4;
  // Shard bounds, once (64-bit divisions are slow).
  __shared__ size_t shardBound[kLpMaxRanks + 1];
  if (threadIdx.x <= static_cast<unsigned>(n)) {
    const size_t nb = (a.count + B - 1) / B;
    shardBound[threadIdx.x] = nb * threadIdx.x / static_cast<size_t>(n);
  }
  __syncthreads();
  auto shardLo = [&](int p) { return shardBound[p]; };
  size_t maxShard = 0;
  for (int p = 0; p < n; ++p) {
    const size_t s = shardLo(p + 1) - shardLo(p);
    maxShard = s > maxShard ? s : maxShard;
  }
  auto blockLen = [&](size_t g) {
    return static_cast<long long>(a.count - g * B < B ? a.count - g * B : B);
  };

  for (uint32_t k = 0;; ++k) {
    const size_t j = static_cast<size_t>(k) * gridDim.x + b;
    if (j * C >= maxShard) break;
    const int slot = static_cast<int>(k % static_cast<uint32_t>(st.slots));
    const uint64_t flag = device::roundFlag(epoch, k);

    // 1. Quantize (the peers' shards: this rank sums its own from its input).
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      const auto span = device::chunkSpan(shardLo(p + 1) - shardLo(p), j, C);
      const ChunkRef dst = device::stagedChunk(st, p, half, b, slot, kLpPhaseA, me);
      for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
        const size_t g = shardLo(p) + span.lo + i;
        const device::InputSource<kBf16> src{static_cast<const char*>(a.send) + g * B * elem,
                                             blockLen(g)};
        device::tileEncode(src, a.blockElems, &dst, 1, i);
      }
    }
    device::exchangeFlags(h, half, kLpPhaseA, slot, flag, st.bound,
                          "low-precision reduce-scatter data");

    // 2. Sum my shard's chunk, requantize it for the peers and decode it into my output.
    {
      ChunkRef srcs[kLpMaxRanks];
      ChunkRef dsts[kLpMaxRanks];
      int ndst = 0;
      for (int q = 0; q < n; ++q) {
        srcs[q] = device::stagedChunk(st, me, half, b, slot, kLpPhaseA, q);
        if (q != me) dsts[ndst++] = device::stagedChunk(st, q, half, b, slot, kLpPhaseB, me);
      }
      const auto span = device::chunkSpan(shardLo(me + 1) - shardLo(me), j, C);
      for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
        const size_t g = shardLo(me) + span.lo + i;
        const device::StagedSumSource<kBf16> src{
            srcs,        n, me,           static_cast<const char*>(a.send) + g * B * elem,
            blockLen(g), i, a.blockElems, a.average};
        const device::DecodeSink<kBf16> own{static_cast<char*>(a.recv) + g * B * elem, blockLen(g)};
        device::tileEncode(src, a.blockElems, dsts, ndst, i, own);
      }
    }
    device::exchangeFlags(h, half, kLpPhaseB, slot, flag, st.bound,
                          "low-precision all-gather data");

    // 3. Decode the peers' shards' chunks.
    for (int q = 0; q < n; ++q) {
      if (q == me) continue;
      const auto span = device::chunkSpan(shardLo(q + 1) - shardLo(q), j, C);
      const ChunkRef c = device::stagedChunk(st, me, half, b, slot, kLpPhaseB, q);
      for (size_t i = tile; span.lo + i < span.hi; i += tiles) {
        const size_t g = shardLo(q) + span.lo + i;
        device::tileDecode<kBf16>(c, i, a.blockElems, static_cast<char*>(a.recv) + g * B * elem,
                                  blockLen(g));
      }
    }
  }
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchLpAllReduce(const LpAllReduceArgs& args, void* stream) {
  const LpStaging& s = args.staging;
  const ctran::KernelLaunch launch{s.blocks, s.threads, stream, false, s.keepSharedMemoryFree};
  if (args.bf16) {
    ctran::launchKernel(lpAllReduceKernel<true>, launch, args);
  } else {
    ctran::launchKernel(lpAllReduceKernel<false>, launch, args);
  }
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the low-precision all_reduce (", s.blocks,
                  " blocks x ", s.threads, " threads)");
}

int lpAllReduceThreadsPerSm() {
  return ctran::gpuBlocksPerSm(lpAllReduceKernel<false>, kLpThreads) * kLpThreads;
}

}  // namespace rcclx::lp
