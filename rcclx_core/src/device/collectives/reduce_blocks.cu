// reduce_blocks: the one GPU kernel behind the reducing collectives other than allreduce
// (reduce, reduce_scatter(v)). Blocks play the plan's send roles (pushing this rank's blocks
// into their reducers' staging, as copy_blocks does) and, on the ranks that reduce, one reduce
// role: lane l waits for chunk j of every peer, combines all ranks' values in rank order (its
// own from the input, the peers' from its staging), writes the result and returns the slots.
// Every element is reduced by exactly one rank, so results are the same bits everywhere.
// PREMUL_SUM scales this rank's input wherever it is loaded: in the send roles (so peers receive
// it scaled) and for the reduce role's own values.
#include "ctran/gpu_runtime.hpp"
#include "ctran/kernel_launch.cuh"
#include "device/allreduce/kernel_common.cuh"
#include "device/collectives/channel_device.cuh"

namespace rcclx::gpu {
namespace {

/// Units a thread reduces per batch (their loads in flight together).
constexpr int kReduceBatch = 2;

/// PREMUL_SUM's send: a chunk of this rank's input, scaled, stored into the peer's slot as whole
/// 16-byte units (the slot holds the chunk rounded up to 16 bytes; the reducer stores only the
/// elements of the chunk).
template <typename T>
struct ScaledChunkCopy {
  double scale;
  __device__ __forceinline__ void operator()(char* dst, const char* src, size_t n, int tid,
                                             int nthr) const {
    constexpr int kBatch = 4;  // loads in flight together before their stores
    const size_t count = n / sizeof(T);
    const size_t units = (count + kPerUnit<T> - 1) / kPerUnit<T>;
    const bool aligned = reinterpret_cast<uintptr_t>(src) % kUnitBytes == 0;
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (size_t u0 = tid; u0 < units; u0 += static_cast<size_t>(kBatch) * nthr) {
      uint4 v[kBatch];
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const size_t u = u0 + static_cast<size_t>(b) * nthr;
        if (u < units) v[b] = loadOwn<T, Op::kPreMulSum>(src, u, count, aligned, scale);
      }
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        const size_t u = u0 + static_cast<size_t>(b) * nthr;
        if (u < units) d[u] = v[b];
      }
    }
  }
};

template <typename T, Op O>
__device__ __forceinline__ void reduceRole(const ExchangePlan& p, const ExchangeRole& r, int lane) {
  using ctran::device::signalRelease;
  using ctran::device::signalWait;
  const ctran::DeviceWindowHandle& h = p.win;
  const int me = h.rank;
  const int n = h.nranks;
  const int tid = threadIdx.x;
  const int nthr = blockDim.x;
  __shared__ uint64_t base[ctran::kMaxDeviceRanks];
  if (tid < n && tid != me) base[tid] = *chunkCounter(p, kRecvCounter, tid, lane);
  __syncthreads();
  uint64_t k = 0;
  for (size_t j = lane; j < r.chunks; j += r.blocks, ++k) {
    if (tid < n && tid != me)
      signalWait(h.signals[me] + readySignal(tid, lane), base[tid] + k + 1, me, tid, p.bound,
                 "a staged chunk to reduce");
    __syncthreads();
    const size_t count = chunkLength(r, j) / sizeof(T);
    const size_t units = (count + kPerUnit<T> - 1) / kPerUnit<T>;
    const char* own = r.src + j * r.chunkBytes;
    char* out = r.dst + j * r.chunkBytes;
    for (size_t u0 = tid; u0 < units; u0 += static_cast<size_t>(kReduceBatch) * nthr) {
      UnitReducer<T, O> acc[kReduceBatch];
      for (int q = 0; q < n; ++q) {
        const uint4* staged = nullptr;
        if (q != me) {
          const int slot = static_cast<int>((base[q] + k) % kChannelSlots);
          staged = reinterpret_cast<const uint4*>(h.data[me] + p.layout.slot(q, lane, slot));
        }
        uint4 v[kReduceBatch];
#pragma unroll
        for (int b = 0; b < kReduceBatch; ++b) {
          const size_t u = u0 + static_cast<size_t>(b) * nthr;
          if (u < units)
            v[b] = q == me ? loadOwn<T, O>(own, u, count, p.aligned, p.premulScalar)
                           : loadStaged(staged + u);
        }
#pragma unroll
        for (int b = 0; b < kReduceBatch; ++b) {
          if (u0 + static_cast<size_t>(b) * nthr >= units) continue;
          if (q == 0) {
            acc[b].first(v[b]);
          } else {
            acc[b].add(v[b]);
          }
        }
      }
#pragma unroll
      for (int b = 0; b < kReduceBatch; ++b) {
        const size_t u = u0 + static_cast<size_t>(b) * nthr;
        if (u < units) storeUnit<T>(out, u, count, p.aligned, acc[b].result(p.avgDivisor));
      }
    }
    __syncthreads();
    if (tid < n && tid != me)
      signalRelease(h.signals[tid] + ackSignal(me, lane), base[tid] + k + 1);
  }
  if (tid < n && tid != me) *chunkCounter(p, kRecvCounter, tid, lane) = base[tid] + k;
}

template <typename T, Op O>
__global__ void __launch_bounds__(kMaxThreads, 2) reduceBlocksKernel(ExchangePlan p) {
  const ExchangeRole r = findRole(p);
  const int i = static_cast<int>(blockIdx.x) - r.firstBlock;
  if (r.kind == RoleKind::kSend) {
    if constexpr (O == Op::kPreMulSum) {
      sendRole(p, r, i, ScaledChunkCopy<T>{p.premulScalar});
    } else {
      sendRole(p, r, i);
    }
  } else {
    reduceRole<T, O>(p, r, i);
  }
}

}  // namespace

void launchReduceBlocks(const ExchangePlan& plan, DataType type, RedOp op, void* stream) {
  if (plan.blocks == 0) return;
  const ctran::KernelLaunch launch{plan.blocks, plan.threads, stream, false,
                                   plan.keepSharedMemoryFree};
  dispatch(kernelType(type, op), op, [&](auto t, auto o) {
    using T = decltype(t);
    ctran::launchKernel(reduceBlocksKernel<T, decltype(o)::value>, launch, plan);
  });
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching reduce_blocks (", plan.blocks, " blocks x ",
                  plan.threads, " threads, ", dataTypeName(type), " ", redOpName(op), ")");
}

int reduceBlocksThreadsPerSm() {
  return ctran::gpuBlocksPerSm(reduceBlocksKernel<float, Op::kSum>, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
