// The host proxy's step kernel (host_proxy.hpp): a call's copies to and from its staging around
// its host parts, in stream order.
#include <cstdint>
#include <type_traits>

#include "ctran/copy_device.cuh"
#include "ctran/signal_device.cuh"
#include "device/host_proxy.hpp"

namespace rcclx::gpu {
namespace {

// One block copies over the bus (the staging is mapped host memory): reading it back is bound by
// the loads in flight, kCopyThreads * kCopyUnroll 16-byte words
// (docs/measurements/2026-12-06_one_launch_proxy_step.md).
constexpr int kCopyThreads = 1024;

// The kernel's arguments: a ProxyStep with room for kParts parts, kCopies copies and kFinished
// finished words.
template <int kParts, int kCopies, int kFinished>
struct StepArgs {
  const uint64_t* copyBackBytes;
  int rank;
  int parts;
  int copies;
  int finished;
  int prefixCopy;
  ProxyStep::Part part[kParts];
  ProxyStep::Copy copy[kCopies];
  ProxyStep::Finished finish[kFinished];
};
// A call of one piece and a few regions (most calls), and the most one kernel takes.
using SmallStep = StepArgs<4, 8, 4>;
using LargeStep = StepArgs<ProxyStep::kMaxParts, ProxyStep::kMaxCopies, ProxyStep::kMaxPieces>;
static_assert(sizeof(LargeStep) + sizeof(ctran::WaitBound) <= 4096,
              "a step kernel's arguments fit the launch's 4 KiB");

template <typename Args>
bool fits(const ProxyStep& step) {
  return step.parts <= static_cast<int>(std::extent_v<decltype(Args::part)>) &&
         step.copies <= static_cast<int>(std::extent_v<decltype(Args::copy)>) &&
         step.finished <= static_cast<int>(std::extent_v<decltype(Args::finish)>);
}

template <typename Args>
Args argsOf(const ProxyStep& step) {
  Args a;
  a.copyBackBytes = step.copyBackBytes;
  a.rank = step.rank;
  a.parts = step.parts;
  a.copies = step.copies;
  a.finished = step.finished;
  a.prefixCopy = step.prefixCopy;
  for (int i = 0; i < step.parts; ++i) a.part[i] = step.part[i];
  for (int i = 0; i < step.copies; ++i) a.copy[i] = step.copy[i];
  for (int i = 0; i < step.finished; ++i) a.finish[i] = step.finish[i];
  return a;
}

__device__ uint64_t epochOf(const ProxyStep::Part& part) {
  return part.replay != nullptr ? ctran::device::signalAcquire(part.replay) : part.epoch;
}

// A copy's bytes; the prefix copy's are read from the word the host part wrote (after the wait
// of its part).
template <typename Args>
__device__ size_t bytesOf(const Args& step, int c) {
  size_t n = step.copy[c].bytes;
  if (c == step.prefixCopy) {
    const uint64_t want = *reinterpret_cast<const volatile uint64_t*>(step.copyBackBytes);
    if (want < n) n = static_cast<size_t>(want);
  }
  return n;
}

// Every store into the staging is fenced at system scope before the "staged" word's release, so
// the executor that acquires the word reads them all; the copies back read the staging only
// after the block acquired the "done" word (thread 0, then the barrier).
template <typename Args>
__global__ void __launch_bounds__(kCopyThreads) proxyStepKernel(Args step, ctran::WaitBound bound) {
  __shared__ bool live;  // no wait of this block was aborted
  if (threadIdx.x == 0) live = true;
  for (int i = 0; i < step.parts; ++i) {
    const ProxyStep::Part& part = step.part[i];
    __syncthreads();  // `live` is set; the previous part's copies are done
    if (part.done != nullptr) {
      if (threadIdx.x == 0 && live) {
        const uint64_t epoch = epochOf(part);
        ctran::device::signalWait(part.done, epoch, step.rank, step.rank, bound,
                                  "the host part of its call");
        live = ctran::device::signalAcquire(part.done) >= epoch;
      }
      __syncthreads();
      if (!live) continue;  // aborted: the outputs in flight are undefined
    }
    for (int c = part.firstCopy; c < part.firstCopy + part.copies; ++c) {
      ctran::device::copyShare(static_cast<char*>(step.copy[c].dst),
                               static_cast<const char*>(step.copy[c].src), bytesOf(step, c),
                               threadIdx.x, blockDim.x);
    }
    if (part.staged == nullptr) continue;
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence_system();
      ctran::device::signalRelease(part.staged, epochOf(part));
    }
  }
  if (step.finished == 0) return;
  __syncthreads();  // every thread's reads of the staging are done
  if (threadIdx.x != 0) return;
  for (int f = 0; f < step.finished; ++f) {
    ctran::device::signalRelease(step.finish[f].word, step.finish[f].epoch);
  }
}

template <typename Args>
void launch(const ProxyStep& step, const ctran::WaitBound& bound, void* stream) {
  const int threads = step.copies > 0 ? kCopyThreads : ctran::kWarpSize;
  proxyStepKernel<Args>
      <<<1, threads, 0, static_cast<gpuStream_t>(stream)>>>(argsOf<Args>(step), bound);
  CTRAN_GPU_CHECK(gpuGetLastError(), "launching the stream step of a call across hosts");
}

}  // namespace

void launchProxyStep(const ProxyStep& step, const ctran::WaitBound& bound, void* stream) {
  if (fits<SmallStep>(step)) {
    launch<SmallStep>(step, bound, stream);
  } else {
    launch<LargeStep>(step, bound, stream);
  }
}

}  // namespace rcclx::gpu
