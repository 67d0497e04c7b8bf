// What a one-sided put costs beyond its copy, and how fast a kernel moves data over the bus to
// and from pinned host memory, on one GPU (one process; the "peer" is a second buffer of the
// same GPU, as for ranks sharing it).
//
// Part 1, per size: blocks of 20 operations timed eagerly and as one CUDA graph, medians of 7:
//   copy engine   cudaMemcpyAsync device to device
//   empty kernel  <<<1, 1>>>, nothing done
//   kernel copy   the put's copy (ctran::device::copyShare, the put's block count), no flag
//   + release.sys the copy, then the flag stored with st.release.sys (what puts do today)
//   + release.gpu the copy, then the flag stored with st.release.gpu (enough for a peer on the
//                 same GPU)
// Several blocks: each block fences at the flag's scope and counts itself in; the last stores.
//
// Part 2: one kernel copying 16 MiB device -> pinned host (mapped) and back with 1-132 blocks of
// 512 threads (and one of 1024), against cudaMemcpyAsync of the same bytes; GB/s, medians of 5.
//
// Part 3: the host time of launching a kernel by the size of its arguments (16 B to 3.5 KiB):
// medians of 20 rounds of 100 launches, the stream drained between rounds.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I ctran/include tools/gpu/signal_cost_probe.cu \
//     -o signal_cost_probe && ./signal_cost_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ctran/copy_device.cuh"

#define CHECK(call)                                                                               \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

namespace {

constexpr int kOps = 20;
constexpr int kBlocks = 7;
constexpr int kThreads = 512;
constexpr size_t kBytesPerBlock = size_t{32} << 10;

enum class Flag { none, sys, gpu };

__global__ void emptyKernel() {}

template <Flag kFlag>
__global__ void putKernel(char* dst, const char* src, size_t bytes, uint64_t* flag,
                          unsigned* arrivals, uint64_t* sent) {
  ctran::device::copyShare(dst, src, bytes,
                           blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
                           static_cast<size_t>(gridDim.x) * blockDim.x);
  if constexpr (kFlag == Flag::none) return;
  __syncthreads();
  if (threadIdx.x != 0) return;
  if (gridDim.x > 1) {
    if (kFlag == Flag::sys)
      __threadfence_system();
    else
      __threadfence();
    if (atomicAdd(arrivals, 1u) != gridDim.x - 1) return;
    if (kFlag == Flag::sys)
      __threadfence_system();
    else
      __threadfence();
    *arrivals = 0;
  }
  const uint64_t next = *sent + 1;
  *sent = next;
  if (kFlag == Flag::sys) {
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(flag), "l"(next) : "memory");
  } else {
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(flag), "l"(next) : "memory");
  }
}

__global__ void busCopyKernel(char* dst, const char* src, size_t bytes) {
  ctran::device::copyShare(dst, src, bytes,
                           blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x,
                           static_cast<size_t>(gridDim.x) * blockDim.x);
}

struct Buffers {
  char* src;
  char* dst;
  uint64_t* words;  // flag, sent
  unsigned* arrivals;
};

int putBlocks(size_t bytes, int sms) {
  const size_t wanted = (bytes + kBytesPerBlock - 1) / kBytesPerBlock;
  return static_cast<int>(std::clamp<size_t>(wanted, 1, static_cast<size_t>(sms) * 4));
}

// Enqueues kOps operations of kind `kind` on `s`.
void enqueue(int kind, const Buffers& b, size_t bytes, int sms, cudaStream_t s) {
  const int blocks = putBlocks(bytes, sms);
  for (int i = 0; i < kOps; ++i) {
    switch (kind) {
      case 0: CHECK(cudaMemcpyAsync(b.dst, b.src, bytes, cudaMemcpyDeviceToDevice, s)); break;
      case 1: emptyKernel<<<1, 1, 0, s>>>(); break;
      case 2:
        putKernel<Flag::none>
            <<<blocks, kThreads, 0, s>>>(b.dst, b.src, bytes, b.words, b.arrivals, b.words + 1);
        break;
      case 3:
        putKernel<Flag::sys>
            <<<blocks, kThreads, 0, s>>>(b.dst, b.src, bytes, b.words, b.arrivals, b.words + 1);
        break;
      default:
        putKernel<Flag::gpu>
            <<<blocks, kThreads, 0, s>>>(b.dst, b.src, bytes, b.words, b.arrivals, b.words + 1);
        break;
    }
  }
  CHECK(cudaGetLastError());
}

float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void partPuts(int sms) {
  constexpr int kKinds = 5;
  const char* names[kKinds] = {"copy engine", "empty kernel", "kernel copy", "+ release.sys",
                               "+ release.gpu"};
  const size_t sizes[] = {size_t{1} << 10, size_t{64} << 10, size_t{1} << 20, size_t{16} << 20};
  const size_t most = sizes[sizeof(sizes) / sizeof(sizes[0]) - 1];
  Buffers b{};
  CHECK(cudaMalloc(&b.src, most));
  CHECK(cudaMalloc(&b.dst, most));
  CHECK(cudaMalloc(&b.words, 2 * sizeof(uint64_t)));
  CHECK(cudaMalloc(&b.arrivals, sizeof(unsigned)));
  CHECK(cudaMemset(b.src, 1, most));
  CHECK(cudaMemset(b.words, 0, 2 * sizeof(uint64_t)));
  CHECK(cudaMemset(b.arrivals, 0, sizeof(unsigned)));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  std::printf("# part 1: us per operation (%d per block, median of %d blocks)\n", kOps, kBlocks);
  std::printf("%10s %6s", "bytes", "mode");
  for (const char* n : names) std::printf(" %14s", n);
  std::printf("\n");
  for (size_t bytes : sizes) {
    for (int graphed = 0; graphed < 2; ++graphed) {
      cudaGraphExec_t execs[kKinds] = {};
      if (graphed) {
        for (int k = 0; k < kKinds; ++k) {
          cudaGraph_t g;
          CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
          enqueue(k, b, bytes, sms, s);
          CHECK(cudaStreamEndCapture(s, &g));
          CHECK(cudaGraphInstantiate(&execs[k], g, 0));
          CHECK(cudaGraphDestroy(g));
        }
      }
      std::vector<float> times[kKinds];
      for (int rep = 0; rep < kBlocks + 2; ++rep) {
        for (int k = 0; k < kKinds; ++k) {  // kinds alternate: drift hits all alike
          CHECK(cudaStreamSynchronize(s));
          CHECK(cudaEventRecord(t0, s));
          if (graphed) {
            CHECK(cudaGraphLaunch(execs[k], s));
          } else {
            enqueue(k, b, bytes, sms, s);
          }
          CHECK(cudaEventRecord(t1, s));
          CHECK(cudaEventSynchronize(t1));
          float ms = 0;
          CHECK(cudaEventElapsedTime(&ms, t0, t1));
          if (rep >= 2) times[k].push_back(ms * 1000.0f / kOps);
        }
      }
      std::printf("%10zu %6s", bytes, graphed ? "graph" : "eager");
      for (int k = 0; k < kKinds; ++k) std::printf(" %14.2f", median(times[k]));
      std::printf("\n");
      for (int k = 0; k < kKinds && graphed; ++k) CHECK(cudaGraphExecDestroy(execs[k]));
    }
  }
  uint64_t words[2] = {};
  CHECK(cudaMemcpy(words, b.words, sizeof(words), cudaMemcpyDeviceToHost));
  std::printf("# flag %llu, sent %llu (every put with a flag counted once)\n",
              static_cast<unsigned long long>(words[0]), static_cast<unsigned long long>(words[1]));
  CHECK(cudaFree(b.src));
  CHECK(cudaFree(b.dst));
  CHECK(cudaFree(b.words));
  CHECK(cudaFree(b.arrivals));
  CHECK(cudaStreamDestroy(s));
}

void partBus(int sms) {
  const size_t bytes = size_t{16} << 20;
  char* dev = nullptr;
  char* host = nullptr;
  char* mapped = nullptr;
  CHECK(cudaMalloc(&dev, bytes));
  CHECK(cudaHostAlloc(&host, bytes, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), host, 0));
  CHECK(cudaMemset(dev, 3, bytes));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CHECK(cudaEventCreate(&t0));
  CHECK(cudaEventCreate(&t1));
  auto gbps = [&](auto&& enqueueOne) {
    std::vector<float> v;
    for (int rep = 0; rep < 7; ++rep) {
      CHECK(cudaEventRecord(t0, s));
      enqueueOne();
      CHECK(cudaEventRecord(t1, s));
      CHECK(cudaEventSynchronize(t1));
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, t0, t1));
      if (rep >= 2) v.push_back(static_cast<float>(bytes) / (ms * 1e6f));
    }
    return median(v);
  };
  std::printf("# part 2: 16 MiB over the bus, GB/s (median of 5)\n");
  std::printf("%12s %12s %12s\n", "blocks", "to host", "from host");
  std::printf("%12s %12.1f %12.1f\n", "copy engine",
              gbps([&] { CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s)); }),
              gbps([&] { CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s)); }));
  for (int blocks : {1, 2, 4, 8, 16, 32, sms}) {
    const float to = gbps([&] { busCopyKernel<<<blocks, kThreads, 0, s>>>(mapped, dev, bytes); });
    const float from = gbps([&] { busCopyKernel<<<blocks, kThreads, 0, s>>>(dev, mapped, bytes); });
    std::printf("%12d %12.1f %12.1f\n", blocks, to, from);
  }
  const float to = gbps([&] { busCopyKernel<<<1, 1024, 0, s>>>(mapped, dev, bytes); });
  const float from = gbps([&] { busCopyKernel<<<1, 1024, 0, s>>>(dev, mapped, bytes); });
  std::printf("%12s %12.1f %12.1f\n", "1 x 1024", to, from);
  CHECK(cudaGetLastError());
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(host));
  CHECK(cudaStreamDestroy(s));
}

template <int kBytes>
struct Args {
  unsigned char bytes[kBytes];
};

template <int kBytes>
__global__ void argsKernel(Args<kBytes> a, int* out) {
  if (a.bytes[0] == 255) *out = a.bytes[kBytes - 1];  // never true: the arguments are zero
}

template <int kBytes>
float launchUs(cudaStream_t s, int* out) {
  constexpr int kLaunches = 100;
  std::vector<float> v;
  Args<kBytes> a{};
  for (int round = 0; round < 22; ++round) {
    CHECK(cudaStreamSynchronize(s));
    const auto begin = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) argsKernel<kBytes><<<1, 32, 0, s>>>(a, out);
    const auto end = std::chrono::steady_clock::now();
    if (round >= 2) v.push_back(std::chrono::duration<float, std::micro>(end - begin).count());
  }
  CHECK(cudaGetLastError());
  return median(v) / kLaunches;
}

void partLaunch() {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  int* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(int)));
  std::printf("# part 3: host us per kernel launch by argument bytes (median of 20 x 100)\n");
  std::printf("%8d %8.2f\n", 16, launchUs<16>(s, out));
  std::printf("%8d %8.2f\n", 256, launchUs<256>(s, out));
  std::printf("%8d %8.2f\n", 512, launchUs<512>(s, out));
  std::printf("%8d %8.2f\n", 1024, launchUs<1024>(s, out));
  std::printf("%8d %8.2f\n", 2048, launchUs<2048>(s, out));
  std::printf("%8d %8.2f\n", 3584, launchUs<3584>(s, out));
  CHECK(cudaFree(out));
  CHECK(cudaStreamDestroy(s));
}

}  // namespace

int main() {
  int dev = 0;
  CHECK(cudaSetDevice(dev));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("# %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  partPuts(prop.multiProcessorCount);
  partBus(prop.multiProcessorCount);
  partLaunch();
  return 0;
}
