// dda_flat on GPU buffers: one-shot push with LL lines, for small messages (from
// flat_lines_min_bytes, where the line staging holds them, dda_flat runs
// allreduce_flat_lines.cu; plan.cpp decides).
//
// Each rank stores its input, 16 bytes at a time, straight into every peer's LL slot for it
// (two LL lines per unit, each carrying the call's epoch as its flag), then reduces locally:
// for every unit it takes the ranks' values in rank order (its own from its input, the peers'
// from its own LL slots, polled until their flags show this epoch) and writes the result. One
// one-way NVLink trip, no fence and no second exchange: the flags travel with the data. The LL
// slots of parity half e % 2 are reused by call e + 2, by which time every peer has finished e.
// PREMUL_SUM scales the input as it is loaded, so peers receive it scaled.
#include "ctran/gpu_runtime.hpp"
#include "device/allreduce/kernel_common.cuh"

namespace rcclx::gpu {
namespace {

struct FlatArgs {
  Buffers buf;
  ctran::DeviceWindowHandle win;
  size_t halfBytes;
  size_t llOffset;
  size_t llSlotBytes;
  ctran::WaitBound bound;
};

template <typename T, Op O>
__global__ void __launch_bounds__(kMaxThreads) ddaFlatKernel(FlatArgs a) {
  awaitPrecedingKernel(a.buf.pdlOneAhead);
  const ctran::DeviceWindowHandle& h = a.win;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t first = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  // The thread's first unit is loaded once, before (and overlapping) the epoch load; most
  // small calls have one unit per thread.
  const uint4 own0 = first < a.buf.units
                         ? loadOwn<T, O>(a.buf.send, first, a.buf.count, a.buf.aligned, a.buf.scale)
                         : make_uint4(0, 0, 0, 0);
  const uint32_t epoch = ctran::device::epochLoad(h);
  const size_t half = epoch & 1u;
  const int me = h.rank;
  const int n = h.nranks;
  const size_t slotOffset = half * a.halfBytes + a.llOffset;

  // Push: my units into every peer's slot `me`.
  for (size_t u = first; u < a.buf.units; u += stride) {
    const uint4 v =
        u == first ? own0 : loadOwn<T, O>(a.buf.send, u, a.buf.count, a.buf.aligned, a.buf.scale);
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      char* dst =
          h.data[p] + slotOffset + static_cast<size_t>(me) * a.llSlotBytes + u * kLlBytesPerUnit;
      llStoreUnit(dst, v, epoch);
    }
  }
  // Reduce: every rank's unit, in rank order.
  const char* mine = h.data[me] + slotOffset;
  for (size_t u = first; u < a.buf.units; u += stride) {
    UnitReducer<T, O> r;
    for (int q = 0; q < n; ++q) {
      const uint4 v =
          q == me
              ? (u == first ? own0
                            : loadOwn<T, O>(a.buf.send, u, a.buf.count, a.buf.aligned, a.buf.scale))
              : llLoadUnit(mine + static_cast<size_t>(q) * a.llSlotBytes + u * kLlBytesPerUnit,
                           epoch, me, q, a.bound);
      if (q == 0) {
        r.first(v);
      } else {
        r.add(v);
      }
    }
    storeUnit<T>(a.buf.recv, u, a.buf.count, a.buf.aligned, r.result(a.buf.avgDivisor));
  }
  __syncthreads();
  ctran::device::epochAdvance(h, epoch);
}

}  // namespace

void launchFlatLl(const LaunchArgs& args, const LaunchShape& shape) {
  FlatArgs a;
  a.buf = buffersOf(args);
  a.win = args.window;
  a.halfBytes = args.layout.halfBytes;
  a.llOffset = args.layout.llOffset;
  a.llSlotBytes = args.layout.llSlotBytes;
  a.bound = args.bound;
  CTRAN_CHECK(a.buf.units * kLlBytesPerUnit <= a.llSlotBytes, ctran::InvalidArgument,
              "dda_flat: ", a.buf.units * kUnitBytes, " bytes exceed the flat slot of ",
              a.llSlotBytes / 2, " bytes");
  dispatch(args.type, args.op, [&](auto t, auto o) {
    using T = decltype(t);
    ctran::launchKernel(
        ddaFlatKernel<T, decltype(o)::value>,
        {shape.blocks, shape.threads, args.stream, args.pdl, args.keepSharedMemoryFree}, a);
  });
  checkLaunch("dda_flat", shape.blocks, shape.threads);
}

int flatLlThreadsPerSm() {
  return ctran::gpuBlocksPerSm(ddaFlatKernel<float, Op::kSum>, kMaxThreads) * kMaxThreads;
}

}  // namespace rcclx::gpu
