// nvlink_probe: the ceiling of GPU-to-GPU bandwidth over NVLink between 2 GPUs (pushing,
// pulling, by copy engine or by bulk copies) while both directions carry the same load at once.
//
// Why both directions: a two-rank allreduce moves its whole message size in each direction at
// the same time, so what bounds it is one direction's throughput while the other direction is
// equally loaded, not an idle-link one-way copy. GPU d pushes its source buffer into GPU (1-d)'s
// destination. Both GPUs are held by one host-written flag until all their work is enqueued, so
// they start together and no launch latency is timed; each is timed with CUDA events on its own
// stream and the slower GPU's time counts. GB/s is per direction: bytes / time / 1e9.
//
//   sm_store     SM threads load 16 B locally and store it to the peer with a plain store
//                (grid-stride, 4 loads issued before 4 stores); blocks x threads swept.
//   sm_store_nc  the same with streaming (evict-first) loads and stores: __ldcs / __stcs.
//   sm_load      the pull: GPU d loads GPU (1-d)'s source and stores it into its own
//                destination (the same end state as the push).
//   sm_mixed     half the grid pushes the first half of the bytes, half pulls the second.
//   copy_engine  cudaMemcpyPeerAsync, and cudaMemcpyAsync(DeviceToDevice) on a peer pointer.
//   sm_ce        SM stores for part of the bytes while the copy engine moves the rest at once
//                (a second stream forked and joined with events): is there link bandwidth
//                left beyond what either reaches alone?
//   lines        the line protocol of the library's line kernels (rcclx_core/src/gpu/lines.cuh):
//                15 payload words of 8 bytes and a flag word per 128-byte line, 8 lanes per
//                line, 4 line groups per warp at once; pushed only (1/15 more bytes on the link).
//   lines_rx     the same, and each warp then polls the lines the peer pushed to it (flag =
//                the launch's epoch, kept in device memory; parity halves) and copies their
//                payload into its destination: the one-shot exchange with nothing reduced.
//   lines_rx_nostore  polls as lines_rx but copies nothing out (timed, not verified).
//   lines_rx_split    lines_rx with half the warps pushing and the other half receiving.
//   sentinel_rx  lines_rx with 16 payload words per line and no flag: an empty slot holds a
//                known pattern, a line has arrived once it differs, and the receiver writes
//                the pattern back after the copy out (1/16 fewer bytes on the link).
//   sentinel_push / sentinel_rx_split  its push alone (timed only); pushers and receivers apart.
//   lines_rx_sms  lines_rx with pushers and receivers on different SMs (one block per SM, the
//                first half of the blocks pushing, the second half receiving).
//   chunks_rx    the one-shot exchange in chunks, a flag after each: pusher warps store a chunk
//                into the peer's staging, fence, and store its flag; receiver warps (the rest
//                of each block) wait for each chunk's flag and copy it out.
//   chunks_sum   the same, writing the sum of the chunk and my own source (32-bit integers).
//   chunks_rx_rel  chunks_rx with a release store as the flag instead of a fence and a store.
//   chunks_flags / chunks_push / chunks_push_rel / chunks_push_nof  taken apart (timed only):
//                receivers that wait for the flags but read nothing; pushers alone (fence,
//                release store, or no ordering at all).
//   host_rx      chunks_rx through pinned host memory (staging and flags on the host, data
//                loads past any cached copy): what PCIe carries each way with both GPUs at it.
//   host_split   one kernel, two paths at once: a few blocks move 1/den of the bytes through
//                host memory as host_rx does, the others the rest over NVLink as chunks_rx.
//   tma_bulk     Hopper bulk copies: one thread per block moves chunks local global -> shared
//                (cp.async.bulk, completion on an mbarrier) -> peer global (bulk_group store),
//                two stages so one chunk's load overlaps the previous chunk's store.
//
// 3 warm-up iterations, then the median of 20; an iteration is 10 back-to-back transfers (time
// / 10), as 10 stream launches and as a CUDA graph of the 10 per GPU (how the library is
// benchmarked). Each (variant, config, size) is first checked exactly, guard bytes after the
// destination included; a failed one is not timed. Sources that fit in L2 stay there.
//
//   tools/gpu/nvlink_probe.sh [--sizes BYTES,BYTES,...] [--quick] [--only VARIANT,...]
//
// This file is the harness (buffers, launches, verification, timing, the table); the kernels
// each variant runs are in nvlink_probe_kernels.cuh.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nvlink_probe_kernels.cuh"

#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    const cudaError_t err_ = (call);                                     \
    if (err_ != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(err_));                            \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

namespace {

using namespace nvlink_probe;

constexpr int kWarmup = 3, kIters = 20, kLaunches = 10;
constexpr size_t kGuard = 256;  // poisoned bytes after each destination: catches overruns

__host__ __device__ uint32_t pattern(uint32_t gpu, size_t i) {
  return (static_cast<uint32_t>(i) * 2654435761u) ^ ((gpu + 1) * 0x9E3779B9u) ^
         static_cast<uint32_t>(i >> 32);
}

__global__ void fillKernel(uint32_t* p, size_t words, uint32_t gpu) {
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += stride)
    p[i] = pattern(gpu, i);
}

// Holds a stream until the host sets gate[0]. Gives up after 2 s (setting gate[1]) so that a
// host stalled while enqueueing cannot hang the probe.
__global__ void gateKernel(volatile int* gate) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    if (gate[0]) return;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < 2000000000ull);
  gate[1] = 1;
}

struct Gpu {
  cudaStream_t stream;
  cudaStream_t side;           // sm_ce: the copy engine's share runs here
  cudaEvent_t fork, join;      // sm_ce: side joins and rejoins stream
  char* lines;                 // lines / lines_rx: two halves of line staging, zeroed
  char* sentinelLines;         // sentinel_rx: two halves of line staging, holding the pattern
  uint32_t* sentinelCounters;  // sentinel_rx: {epoch, blocks done}
  uint32_t* counters;          // lines_rx: {epoch, blocks done}
  uint4* stage;                // chunks_*: two halves of staging
  uint64_t* flags;             // chunks_*: one flag per chunk, zeroed
  uint32_t* chunkCounters;     // chunks_*: {epoch, blocks done}
  uint4* hostStage;            // host_*: pinned host memory this GPU writes and its peer reads
  uint64_t* hostFlags;         // host_*: one flag per chunk in pinned host memory, zeroed
  uint8_t *src, *dst;
  cudaEvent_t start, stop;
  volatile int* gate;  // this device's view of the host flag
};
Gpu g[2];
int* hostGate;

// Enqueues one transfer of `bytes` from GPU d's source into GPU (1-d)'s destination on GPU d's
// stream (GPU d current). Returns the error rather than exiting so graph capture can fail softly.
using Launch = std::function<cudaError_t(int d, size_t bytes)>;
struct Config {
  const char* variant;
  std::string label;
  Launch launch;
  bool linesOut = false;    // writes the peer's line staging, not its destination (lines)
  bool unverified = false;  // moves nothing checkable (timed only; said in the output)
  bool sumOut = false;      // the destination holds the sum of both sources (32-bit words)
};
size_t linesHalfBytes = 0;
size_t chunkHalfUnits = 0;
struct Row {
  const Config* config;
  size_t bytes;
  double streamUs, graphUs;  // graphUs < 0: the runtime would not capture it
};

std::string sizeName(size_t b) {
  const bool mib = b % (1 << 20) == 0, kib = b % (1 << 10) == 0;
  return std::to_string(mib ? b >> 20 : kib ? b >> 10 : b) + (mib ? " MiB" : kib ? " KiB" : " B");
}

void printRow(const Row& r) {
  std::printf("%-12s %-12s %8s %10.2f %11.1f", r.config->variant, r.config->label.c_str(),
              sizeName(r.bytes).c_str(), r.streamUs, r.bytes / r.streamUs / 1e3);
  if (r.graphUs > 0) std::printf(" %10.2f %11.1f\n", r.graphUs, r.bytes / r.graphUs / 1e3);
  if (r.graphUs <= 0) std::printf(" %10s %11s\n", "-", "-");
}

// Microseconds per transfer: enqueue(d) runs kLaunches transfers on GPU d behind the gate; the
// slower GPU's event time counts; median over kIters iterations.
double medianUs(const std::function<void(int)>& enqueue) {
  std::vector<float> ms;
  for (int it = 0; it < kWarmup + kIters; ++it) {
    __atomic_store_n(&hostGate[0], 0, __ATOMIC_SEQ_CST);
    for (int d = 0; d < 2; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      gateKernel<<<1, 1, 0, g[d].stream>>>(g[d].gate);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaEventRecord(g[d].start, g[d].stream));
      enqueue(d);
      CUDA_CHECK(cudaEventRecord(g[d].stop, g[d].stream));
    }
    __atomic_store_n(&hostGate[0], 1, __ATOMIC_SEQ_CST);
    float worst = 0;
    for (int d = 0; d < 2; ++d) {
      float t = 0;
      CUDA_CHECK(cudaEventSynchronize(g[d].stop));
      CUDA_CHECK(cudaEventElapsedTime(&t, g[d].start, g[d].stop));
      worst = std::max(worst, t);
    }
    if (it >= kWarmup) ms.push_back(worst);
  }
  if (__atomic_exchange_n(&hostGate[1], 0, __ATOMIC_SEQ_CST))
    std::printf("warning: a start gate timed out; the GPUs did not start together\n");
  std::sort(ms.begin(), ms.end());
  return (ms[(kIters - 1) / 2] + ms[kIters / 2]) / 2.0 * 1000.0 / kLaunches;
}

double graphUs(const Launch& launch, size_t bytes) {
  cudaGraphExec_t exec[2] = {nullptr, nullptr};
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaStreamBeginCapture(g[d].stream, cudaStreamCaptureModeThreadLocal));
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < kLaunches && err == cudaSuccess; ++k) err = launch(d, bytes);
    cudaGraph_t graph = nullptr;
    const cudaError_t endErr = cudaStreamEndCapture(g[d].stream, &graph);
    if (err == cudaSuccess) err = endErr;
    if (err != cudaSuccess) {
      std::printf("note: graph capture failed (%s): no graph column\n", cudaGetErrorString(err));
      (void)cudaGetLastError();
      if (graph) CUDA_CHECK(cudaGraphDestroy(graph));
      if (d == 1) CUDA_CHECK(cudaGraphExecDestroy(exec[0]));
      return -1;
    }
    CUDA_CHECK(cudaGraphInstantiate(&exec[d], graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
  }
  const double us = medianUs([&](int d) { CUDA_CHECK(cudaGraphLaunch(exec[d], g[d].stream)); });
  for (int d = 0; d < 2; ++d) CUDA_CHECK(cudaGraphExecDestroy(exec[d]));
  return us;
}

// One transfer each way into poisoned destinations, then an exact comparison of each
// destination, and of the guard after it, with what the sender should have written.
bool verify(const Config& c, size_t bytes) {
  if (c.unverified) {  // one launch each way, so it runs; its output is not checkable
    for (int d = 0; d < 2; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      CUDA_CHECK(c.launch(d, bytes));
    }
    for (int d = 0; d < 2; ++d) CUDA_CHECK(cudaStreamSynchronize(g[d].stream));
    std::printf("note: %s (%s) is timed but not verified\n", c.variant, c.label.c_str());
    return true;
  }
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(cudaMemset(g[d].dst, 0xFF, bytes + kGuard));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    CUDA_CHECK(c.launch(d, bytes));
  }
  for (int d = 0; d < 2; ++d) {
    const cudaError_t err = cudaStreamSynchronize(g[d].stream);
    if (err != cudaSuccess) {  // a fault leaves the context unusable: nothing more can run
      std::printf("FAIL %s: verify failed (%s, %s): %s\n", c.variant, c.label.c_str(),
                  sizeName(bytes).c_str(), cudaGetErrorString(err));
      std::exit(1);
    }
  }
  if (c.linesOut) {  // every line: 15 payload words of the sender's source, then the flag
    const size_t words = bytes / 8, lines = lineCount(words);
    std::vector<uint64_t> got(lines * kLineWords);
    for (int d = 0; d < 2; ++d) {
      CUDA_CHECK(cudaSetDevice(1 - d));
      CUDA_CHECK(cudaMemcpy(got.data(), g[1 - d].lines, got.size() * 8, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < got.size(); ++i) {
        const size_t w = i / kLineWords * kLinePayload + i % kLineWords;
        const bool flagWord = i % kLineWords == kLineWords - 1;
        const uint64_t want = flagWord ? kPushFlag
                              : w < words
                                  ? (uint64_t(pattern(d, 2 * w + 1)) << 32) | pattern(d, 2 * w)
                                  : 0;
        if (got[i] == want) continue;
        std::printf("FAIL %s: verify failed (%s, %s, GPU %d -> %d: line word %zu)\n", c.variant,
                    c.label.c_str(), sizeName(bytes).c_str(), d, 1 - d, i);
        return false;
      }
    }
    return true;
  }
  std::vector<uint32_t> got((bytes + kGuard) / 4);
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(1 - d));
    CUDA_CHECK(cudaMemcpy(got.data(), g[1 - d].dst, bytes + kGuard, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < got.size(); ++i) {
      const uint32_t want = i >= bytes / 4 ? 0xFFFFFFFFu
                            : c.sumOut     ? pattern(d, i) + pattern(1 - d, i)
                                           : pattern(d, i);
      if (got[i] == want) continue;
      std::printf(
          "FAIL %s: verify failed (%s, %s, GPU %d -> %d: word %zu is 0x%08x, not 0x%08x%s)\n",
          c.variant, c.label.c_str(), sizeName(bytes).c_str(), d, 1 - d, i, got[i], want,
          i < bytes / 4 ? "" : ", past the end");
      return false;
    }
  }
  return true;
}

std::vector<Config> makeConfigs(bool quick) {
  using V = std::vector<int>;
  std::vector<Config> out;
  auto smStore = [&](const char* name, bool streaming, const V& blocks, const V& threads) {
    for (int b : blocks)
      for (int t : threads)
        out.push_back(
            {name, std::to_string(b) + " x " + std::to_string(t), [=](int d, size_t bytes) {
               auto* src = reinterpret_cast<const uint4*>(g[d].src);
               auto* dst = reinterpret_cast<uint4*>(g[1 - d].dst);
               auto* kernel = streaming ? smStoreKernel<true> : smStoreKernel<false>;
               kernel<<<b, t, 0, g[d].stream>>>(src, dst, bytes / 16);
               return cudaGetLastError();
             }});
  };
  smStore("sm_store", false, quick ? V{64, 132} : V{32, 64, 128, 132},
          quick ? V{512} : V{256, 512, 1024});
  smStore("sm_store_nc", true, quick ? V{132} : V{128, 132}, {512});
  // Pulls: GPU d loads GPU (1 - d)'s source into its own destination (the same end state).
  for (int b : quick ? V{132, 264} : V{64, 132, 264})
    out.push_back({"sm_load", std::to_string(b) + " x 512", [=](int d, size_t bytes) {
                     auto* src = reinterpret_cast<const uint4*>(g[1 - d].src);
                     auto* dst = reinterpret_cast<uint4*>(g[d].dst);
                     smStoreKernel<false><<<b, 512, 0, g[d].stream>>>(src, dst, bytes / 16);
                     return cudaGetLastError();
                   }});
  for (int b : quick ? V{132, 264} : V{132, 264})
    out.push_back({"sm_mixed", std::to_string(b) + " x 512", [=](int d, size_t bytes) {
                     smMixedKernel<<<b, 512, 0, g[d].stream>>>(
                         reinterpret_cast<const uint4*>(g[d].src),
                         reinterpret_cast<uint4*>(g[1 - d].dst),
                         reinterpret_cast<const uint4*>(g[1 - d].src),
                         reinterpret_cast<uint4*>(g[d].dst), bytes / 16);
                     return cudaGetLastError();
                   }});
  for (int pct : V{25, 40, 50})
    out.push_back({"sm_ce", "132 x 512 +" + std::to_string(pct) + "%", [=](int d, size_t bytes) {
                     const size_t ce = bytes * pct / 100 / 16 * 16, sm = bytes - ce;
                     cudaError_t err = cudaEventRecord(g[d].fork, g[d].stream);
                     if (err == cudaSuccess) err = cudaStreamWaitEvent(g[d].side, g[d].fork, 0);
                     if (err == cudaSuccess)
                       err = cudaMemcpyAsync(g[1 - d].dst + sm, g[d].src + sm, ce,
                                             cudaMemcpyDeviceToDevice, g[d].side);
                     if (err != cudaSuccess) return err;
                     smStoreKernel<false><<<132, 512, 0, g[d].stream>>>(
                         reinterpret_cast<const uint4*>(g[d].src),
                         reinterpret_cast<uint4*>(g[1 - d].dst), sm / 16);
                     err = cudaGetLastError();
                     if (err == cudaSuccess) err = cudaEventRecord(g[d].join, g[d].side);
                     if (err == cudaSuccess) err = cudaStreamWaitEvent(g[d].stream, g[d].join, 0);
                     return err;
                   }});
  // The library's line kernels' shape: 256 blocks of 256 threads at most, 4 lines per warp.
  for (int b : V{132, 256}) {
    Config push{"lines", std::to_string(b) + " x 256", [=](int d, size_t bytes) {
                  linesPushKernel<<<b, 256, 0, g[d].stream>>>(
                      reinterpret_cast<const uint64_t*>(g[d].src), g[1 - d].lines, bytes / 8);
                  return cudaGetLastError();
                }};
    push.linesOut = true;
    out.push_back(push);
    auto rx = [&](const char* name, auto kernel, bool unverified) {
      Config c{name, std::to_string(b) + " x 256", [=](int d, size_t bytes) {
                 kernel<<<b, 256, 0, g[d].stream>>>(
                     reinterpret_cast<const uint64_t*>(g[d].src), g[1 - d].lines, g[d].lines,
                     reinterpret_cast<uint64_t*>(g[d].dst), bytes / 8, linesHalfBytes,
                     g[d].counters, g[d].counters + 1);
                 return cudaGetLastError();
               }};
      c.unverified = unverified;
      out.push_back(c);
    };
    rx("lines_rx", linesExchangeKernel<kRx>, false);
    rx("lines_rx_nostore", linesExchangeKernel<kRxNoStore>, true);
    rx("lines_rx_split", linesExchangeKernel<kRxSplit>, false);
    Config spush{"sentinel_push", std::to_string(b) + " x 256", [=](int d, size_t bytes) {
                   sentinelPushKernel<<<b, 256, 0, g[d].stream>>>(
                       reinterpret_cast<const uint64_t*>(g[d].src),
                       reinterpret_cast<char*>(g[1 - d].stage), bytes / 8);
                   return cudaGetLastError();
                 }};
    spush.unverified = true;
    out.push_back(spush);
    auto srx = [&](const char* name, auto kernel) {
      out.push_back({name, std::to_string(b) + " x 256", [=](int d, size_t bytes) {
                       kernel<<<b, 256, 0, g[d].stream>>>(
                           reinterpret_cast<const uint64_t*>(g[d].src), g[1 - d].sentinelLines,
                           g[d].sentinelLines, reinterpret_cast<uint64_t*>(g[d].dst), bytes / 8,
                           linesHalfBytes, g[d].sentinelCounters, g[d].sentinelCounters + 1);
                       return cudaGetLastError();
                     }});
    };
    srx("sentinel_rx", sentinelExchangeKernel<false>);
    srx("sentinel_rx_split", sentinelExchangeKernel<true>);
  }
  // Pushers and receivers on different SMs: one block per SM, the first half pushing.
  for (int t : V{512, 1024})
    for (int b : V{128, 132}) {
      Config c{"lines_rx_sms", std::to_string(b) + " x " + std::to_string(t),
               [=](int d, size_t bytes) {
                 linesExchangeKernel<kRxSplitBlocks><<<b, t, 0, g[d].stream>>>(
                     reinterpret_cast<const uint64_t*>(g[d].src), g[1 - d].lines, g[d].lines,
                     reinterpret_cast<uint64_t*>(g[d].dst), bytes / 8, linesHalfBytes,
                     g[d].counters, g[d].counters + 1);
                 return cudaGetLastError();
               }};
      out.push_back(c);
    }
  // One-shot exchange in chunks with per-chunk flags, pushers and receivers apart.
  struct ChunkVariant {
    const char* name;
    ChunkRx mode;
    ChunkFence fence;
    decltype(&chunksExchangeKernel<kCopy>) kernel;
  };
  for (ChunkVariant v : {
           ChunkVariant{"chunks_rx", kCopy, kFenceSc, chunksExchangeKernel<kCopy>},
           ChunkVariant{"chunks_sum", kSum, kFenceSc, chunksExchangeKernel<kSum>},
           ChunkVariant{"chunks_flags", kFlagsOnly, kFenceSc, chunksExchangeKernel<kFlagsOnly>},
           ChunkVariant{"chunks_push", kNoRx, kFenceSc, chunksExchangeKernel<kNoRx>},
           ChunkVariant{"chunks_rx_rel", kCopy, kRelease, chunksExchangeKernel<kCopy, kRelease>},
           ChunkVariant{"chunks_push_rel", kNoRx, kRelease, chunksExchangeKernel<kNoRx, kRelease>},
           ChunkVariant{"chunks_push_nof", kNoRx, kNoFence, chunksExchangeKernel<kNoRx, kNoFence>},
       })
    for (int b : V{132, 264})
      for (int pw : V{4, 8})
        for (int cu : V{256, 512}) {
          const int threads = 512;
          Config c{v.name,
                   std::to_string(b) + "x" + std::to_string(threads) + " p" + std::to_string(pw) +
                       " c" + std::to_string(cu * 16 / 1024) + "K",
                   [=](int d, size_t bytes) {
                     v.kernel<<<b, threads, 0, g[d].stream>>>(
                         reinterpret_cast<const uint4*>(g[d].src), g[1 - d].stage, g[d].stage,
                         reinterpret_cast<uint4*>(g[d].dst), bytes / 16, cu, chunkHalfUnits,
                         g[1 - d].flags, g[d].flags, pw, g[d].chunkCounters,
                         g[d].chunkCounters + 1);
                     return cudaGetLastError();
                   }};
          c.sumOut = v.mode == kSum;
          c.unverified = v.mode == kFlagsOnly || v.mode == kNoRx;
          out.push_back(c);
        }
  // PCIe as a second path: chunks through pinned host memory (host_rx: all of the bytes;
  // host_split: 1/den of them, the rest over NVLink at once, in one kernel).
  auto hostPath = [](int d) {
    return ChunkPath{g[d].hostStage, g[1 - d].hostStage, g[d].hostFlags, g[1 - d].hostFlags};
  };
  auto split = [&](const char* name, int den, int hostBlocks, int blocks, int pw, int cu) {
    out.push_back({name,
                   "1/" + std::to_string(den) + " h" + std::to_string(hostBlocks) + " " +
                       std::to_string(blocks) + " p" + std::to_string(pw),
                   [=](int d, size_t bytes) {
                     const size_t units = bytes / 16;
                     const size_t hostUnits = den == 1 ? units : units / den / cu * cu;
                     const ChunkPath nvl{g[1 - d].stage, g[d].stage, g[1 - d].flags, g[d].flags};
                     splitExchangeKernel<<<blocks, 512, 0, g[d].stream>>>(
                         reinterpret_cast<const uint4*>(g[d].src),
                         reinterpret_cast<uint4*>(g[d].dst), units, hostUnits, hostBlocks, nvl,
                         hostPath(d), cu, 256, chunkHalfUnits, pw, g[d].chunkCounters,
                         g[d].chunkCounters + 1);
                     return cudaGetLastError();
                   }});
  };
  for (int b : V{4, 8, 16, 32}) split("host_rx", 1, b, b, 8, 256);
  for (int den : V{8, 12, 16, 24})
    for (int hb : V{4, 8, 16}) {
      split("host_split", den, hb, 132 + hb, 8, 512);
      split("host_split", den, hb, 264, 8, 256);
    }
  out.push_back({"copy_engine", "MemcpyPeer", [](int d, size_t bytes) {
                   return cudaMemcpyPeerAsync(g[1 - d].dst, 1 - d, g[d].src, d, bytes, g[d].stream);
                 }});
  out.push_back({"copy_engine", "Memcpy D2D", [](int d, size_t bytes) {
                   return cudaMemcpyAsync(g[1 - d].dst, g[d].src, bytes, cudaMemcpyDeviceToDevice,
                                          g[d].stream);
                 }});
  // Last: a fault in hand-written PTX ends the run, so the other variants have reported by then.
  for (int b : quick ? V{32, 132} : V{16, 32, 64, 132})
    for (int kib : quick ? V{32} : V{16, 32})
      out.push_back({"tma_bulk", std::to_string(b) + " x " + std::to_string(kib) + "K",
                     [=](int d, size_t bytes) {
                       const uint32_t chunk = kib << 10;
                       tmaBulkKernel<<<b, 32, kStages * chunk, g[d].stream>>>(
                           g[d].src, g[1 - d].dst, bytes, chunk);
                       return cudaGetLastError();
                     }});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> sizes = {256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20, 64 << 20};
  bool quick = false;
  std::string only;  // comma-separated variants to run (empty: all)
  for (int a = 1; a < argc; ++a) {
    const std::string arg = argv[a];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--only" && a + 1 < argc) {
      only = "," + std::string(argv[++a]) + ",";
    } else if (arg == "--sizes" && a + 1 < argc) {
      sizes.clear();
      for (char *p = argv[++a], *end = p; *p; p = *end == ',' ? end + 1 : end) {
        sizes.push_back(std::strtoull(p, &end, 10));
        if (end == p || sizes.back() == 0 || sizes.back() % 16 != 0 || (*end && *end != ',')) {
          std::fprintf(stderr, "--sizes: '%s' is not a list of byte counts (multiples of 16)\n",
                       argv[a]);
          return 2;
        }
      }
    } else {
      std::fprintf(stderr, "usage: %s [--sizes BYTES,BYTES,...] [--quick] [--only VARIANT,...]\n",
                   argv[0]);
      return 2;
    }
  }

  int n = 0;
  const cudaError_t countErr = cudaGetDeviceCount(&n);
  if (countErr != cudaSuccess || n != 2) {
    std::printf("needs exactly 2 GPUs (CUDA_VISIBLE_DEVICES can pick 2); found %d (%s)\n",
                countErr == cudaSuccess ? n : 0, cudaGetErrorString(countErr));
    return 2;
  }
  for (int d = 0; d < 2; ++d) {
    int ok = 0;
    CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, d, 1 - d));
    if (ok) continue;
    std::printf("GPU %d cannot access GPU %d as a peer; the probe needs peer access\n", d, 1 - d);
    return 2;
  }

  const size_t capacity = *std::max_element(sizes.begin(), sizes.end());
  CUDA_CHECK(
      cudaHostAlloc(&hostGate, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
  hostGate[0] = hostGate[1] = 0;
  for (int d = 0; d < 2; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    const cudaError_t peerErr = cudaDeviceEnablePeerAccess(1 - d, 0);
    if (peerErr != cudaErrorPeerAccessAlreadyEnabled) CUDA_CHECK(peerErr);
    (void)cudaGetLastError();
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    std::printf("GPU %d: %s, sm_%d%d, %d SMs\n", d, prop.name, prop.major, prop.minor,
                prop.multiProcessorCount);
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&g[d].start));
    CUDA_CHECK(cudaEventCreate(&g[d].stop));
    CUDA_CHECK(cudaMalloc(&g[d].src, capacity));
    CUDA_CHECK(cudaMalloc(&g[d].dst, capacity + kGuard));
    linesHalfBytes = (lineCount(capacity / 8) + 1) * 128;
    CUDA_CHECK(cudaMalloc(&g[d].lines, 2 * linesHalfBytes));
    CUDA_CHECK(cudaMemset(g[d].lines, 0, 2 * linesHalfBytes));
    CUDA_CHECK(cudaMalloc(&g[d].sentinelLines, 2 * linesHalfBytes));
    sentinelFillKernel<<<256, 256>>>(reinterpret_cast<uint64_t*>(g[d].sentinelLines),
                                     linesHalfBytes / 8);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMalloc(&g[d].sentinelCounters, 2 * sizeof(uint32_t)));
    CUDA_CHECK(cudaMemset(g[d].sentinelCounters, 0, 2 * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&g[d].counters, 2 * sizeof(uint32_t)));
    CUDA_CHECK(cudaMemset(g[d].counters, 0, 2 * sizeof(uint32_t)));
    chunkHalfUnits = capacity / 16;
    CUDA_CHECK(cudaMalloc(&g[d].stage, 2 * capacity));
    CUDA_CHECK(cudaMalloc(&g[d].flags, (capacity / 4096 + 1) * sizeof(uint64_t)));
    CUDA_CHECK(cudaMemset(g[d].flags, 0, (capacity / 4096 + 1) * sizeof(uint64_t)));
    CUDA_CHECK(
        cudaHostAlloc(&g[d].hostStage, 2 * capacity, cudaHostAllocMapped | cudaHostAllocPortable));
    CUDA_CHECK(cudaHostAlloc(&g[d].hostFlags, (capacity / 4096 + 1) * sizeof(uint64_t),
                             cudaHostAllocMapped | cudaHostAllocPortable));
    std::memset(g[d].hostFlags, 0, (capacity / 4096 + 1) * sizeof(uint64_t));
    CUDA_CHECK(cudaMalloc(&g[d].chunkCounters, 2 * sizeof(uint32_t)));
    CUDA_CHECK(cudaMemset(g[d].chunkCounters, 0, 2 * sizeof(uint32_t)));
    CUDA_CHECK(cudaStreamCreateWithFlags(&g[d].side, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&g[d].fork, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&g[d].join, cudaEventDisableTiming));
    int* gate = nullptr;
    CUDA_CHECK(cudaHostGetDevicePointer(&gate, hostGate, 0));
    g[d].gate = gate;
    CUDA_CHECK(cudaFuncSetAttribute(tmaBulkKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kStages * kMaxChunk));
    fillKernel<<<256, 256>>>(reinterpret_cast<uint32_t*>(g[d].src), capacity / 4, d);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
  }

  std::printf(
      "\nboth GPUs move data at once; GB/s per direction; us per transfer (median of %d x %d)\n",
      kIters, kLaunches);
  const char* header = "%-12s %-12s %8s %10s %11s %10s %11s\n";
  std::printf(header, "variant", "config", "size", "stream us", "stream GB/s", "graph us",
              "graph GB/s");
  const std::vector<Config> configs = makeConfigs(quick);
  std::vector<Row> rows;
  int failed = 0;
  for (const Config& c : configs) {
    if (!only.empty() && only.find("," + std::string(c.variant) + ",") == std::string::npos)
      continue;
    for (size_t bytes : sizes) {
      if (!verify(c, bytes)) {
        ++failed;
        continue;
      }
      const double stream = medianUs([&](int d) {
        for (int k = 0; k < kLaunches; ++k) CUDA_CHECK(c.launch(d, bytes));
      });
      rows.push_back({&c, bytes, stream, graphUs(c.launch, bytes)});
      printRow(rows.back());
      std::fflush(stdout);
    }
  }

  // Best config of each variant per size, ranked by graph time where there is one.
  auto rank = [](const Row& r) { return r.graphUs > 0 ? r.graphUs : r.streamUs; };
  std::map<std::pair<size_t, std::string>, const Row*> best;
  for (const Row& r : rows) {
    const Row*& b = best[{r.bytes, r.config->variant}];
    if (!b || rank(r) < rank(*b)) b = &r;
  }
  std::printf("\nbest config of each variant per size (by graph time)\n");
  std::printf(header, "variant", "config", "size", "stream us", "stream GB/s", "graph us",
              "graph GB/s");
  for (const auto& entry : best) printRow(*entry.second);
  if (failed) std::printf("\nFAIL: %d (variant, config, size) checks failed\n", failed);
  return failed ? 1 : 0;
}
