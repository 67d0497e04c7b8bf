// The ABI against the core's C++ entry on GPU buffers, in one run (built with the GPU code
// only): per size, the host time of an eager allreduce call on a stream, and the GPU time per
// allreduce of a CUDA graph of 20 captured calls, each replayed after a warm-up; medians, for
// `ncclAllReduce` and for `rcclx::Communicator::allReduce` on the same GPU and buffers.
//
// One process per rank, every rank on GPU rank % (number of GPUs):
//   cmake --build <build dir> --target nccl_abi_bench_gpu
//   for r in 0 1; do NCCL_COMM_ID=127.0.0.1:29600 MASTER_ADDR=127.0.0.1 MASTER_PORT=29610 \
//     RANK=$r WORLD_SIZE=2 <build dir>/nccl_compat/nccl_abi_bench_gpu & done; wait
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "nccl.h"
#include "rcclx/communicator.hpp"

namespace {

constexpr int kEagerCalls = 2000;
constexpr int kBlocks = 9;
constexpr int kOpsPerGraph = 20;
constexpr int kReplays = 15;

void checkCuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

void checkNccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, ncclGetLastError(nullptr));
  std::exit(1);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Host microseconds per call of `call` (the GPU work is waited for outside the timing).
double eagerMicros(const std::function<void()>& call, cudaStream_t s) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kEagerCalls; ++i) call();
  const auto t1 = std::chrono::steady_clock::now();
  checkCuda(cudaStreamSynchronize(s), "eager sync");
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / kEagerCalls;
}

/// GPU microseconds per captured call: a graph of kOpsPerGraph calls, median of kReplays.
double graphMicros(const std::function<void()>& call, cudaStream_t s) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  checkCuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), "begin capture");
  for (int i = 0; i < kOpsPerGraph; ++i) call();
  checkCuda(cudaStreamEndCapture(s, &graph), "end capture");
  checkCuda(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> times;
  for (int r = 0; r < kReplays + 3; ++r) {
    cudaEventRecord(start, s);
    checkCuda(cudaGraphLaunch(exec, s), "launch");
    cudaEventRecord(stop, s);
    checkCuda(cudaEventSynchronize(stop), "replay");
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    if (r >= 3) times.push_back(1000.0 * ms / kOpsPerGraph);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return median(times);
}

}  // namespace

int main() {
  const char* rankEnv = std::getenv("RANK");
  const char* worldEnv = std::getenv("WORLD_SIZE");
  if (!rankEnv || !worldEnv || !std::getenv("NCCL_COMM_ID")) {
    std::fprintf(stderr, "set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and NCCL_COMM_ID\n");
    return 2;
  }
  const int rank = std::atoi(rankEnv), world = std::atoi(worldEnv);
  int ndev = 0;
  checkCuda(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
  const int dev = rank % ndev;
  checkCuda(cudaSetDevice(dev), "cudaSetDevice");
  auto core = std::make_unique<rcclx::Communicator>(ctran::Bootstrap::fromEnv(),
                                                    rcclx::CommConfig{dev, {}});
  ncclUniqueId id;
  checkNccl(ncclGetUniqueId(&id), "ncclGetUniqueId");  // NCCL_COMM_ID: the same on every rank
  ncclComm_t comm = nullptr;
  checkNccl(ncclCommInitRank(&comm, world, id, rank), "ncclCommInitRank");

  cudaStream_t s;
  checkCuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  const size_t maxBytes = size_t{16} << 20;
  void *in = nullptr, *out = nullptr;
  checkCuda(cudaMalloc(&in, maxBytes), "cudaMalloc");
  checkCuda(cudaMalloc(&out, maxBytes), "cudaMalloc");
  checkCuda(cudaMemset(in, 0, maxBytes), "cudaMemset");
  if (rank == 0) {
    std::printf(
        "allreduce float32 sum, %d ranks, GPU buffers; host: us per eager call; graph: "
        "GPU us per call (graph of %d)\n",
        world, kOpsPerGraph);
    std::printf("%10s %12s %12s %12s %12s\n", "bytes", "host core", "host ABI", "graph core",
                "graph ABI");
  }
  for (size_t bytes : {size_t{1} << 10, size_t{64} << 10, size_t{1} << 20, maxBytes}) {
    const size_t count = bytes / sizeof(float);
    rcclx::CallOptions opts;
    opts.stream = static_cast<void*>(s);
    const auto send = rcclx::Buffer::onDevice(in, count, rcclx::DataType::kFloat32, dev);
    const auto recv = rcclx::Buffer::onDevice(out, count, rcclx::DataType::kFloat32, dev);
    std::function<void()> viaCore = [&] { core->allReduce(send, recv, rcclx::RedOp::kSum, opts); };
    std::function<void()> viaAbi = [&] {
      checkNccl(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
    };
    std::vector<double> hostCore, hostAbi;
    for (int b = 0; b < kBlocks; ++b) {  // alternating blocks: drift hits both alike
      hostCore.push_back(eagerMicros(viaCore, s));
      hostAbi.push_back(eagerMicros(viaAbi, s));
    }
    const double graphCore = graphMicros(viaCore, s), graphAbi = graphMicros(viaAbi, s);
    if (rank == 0)
      std::printf("%10zu %12.2f %12.2f %12.2f %12.2f\n", bytes, median(hostCore), median(hostAbi),
                  graphCore, graphAbi);
  }
  checkNccl(ncclCommDestroy(comm), "ncclCommDestroy");
  core->destroy();
  cudaFree(in);
  cudaFree(out);
  cudaStreamDestroy(s);
  return 0;
}
