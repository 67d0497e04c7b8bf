/* CUDA graph capture of each collective through the NCCL ABI (GPU only; built with
 * NCCL_TEST_GPU): every collective is captured once in global mode, as torch and vLLM capture,
 * then the graph is replayed with new inputs, each replay verified.
 * Usage: graph_capture RANK NRANKS */
#include "nccl_test.h"

#ifndef NCCL_TEST_GPU
#error graph_capture.c needs NCCL_TEST_GPU (CUDA)
#endif

enum { kCount = 4096, kReplays = 3 };

static int R, N;
static ncclComm_t comm;
static cudaStream_t stream;

typedef void (*enqueue_fn)(float* in, float* out);

static void all_reduce(float* in, float* out) {
  NCCLCHECK(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, comm, stream));
}
static void all_gather(float* in, float* out) {
  NCCLCHECK(ncclAllGather(in, out, kCount / N, ncclFloat32, comm, stream));
}
static void reduce_scatter(float* in, float* out) {
  NCCLCHECK(ncclReduceScatter(in, out, kCount / N, ncclFloat32, ncclSum, comm, stream));
}
static void broadcast(float* in, float* out) {
  NCCLCHECK(ncclBroadcast(in, out, kCount, ncclFloat32, 0, comm, stream));
}
static void all_to_all(float* in, float* out) {
  NCCLCHECK(ncclAlltoAll(in, out, kCount / N, ncclFloat32, comm, stream));
}
static void send_recv(float* in, float* out) {
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(in, kCount, ncclFloat32, (R + 1) % N, comm, stream));
  NCCLCHECK(ncclRecv(out, kCount, ncclFloat32, (R + N - 1) % N, comm, stream));
  NCCLCHECK(ncclGroupEnd());
}

/* Rank r's input element i at replay k. */
static float value(int r, int i, int k) { return (float)((r + 1) * 1000 + i % 97 + k * 7); }

static float expected(const char* name, int i, int k) {
  const int block = kCount / N;
  if (strcmp(name, "all_reduce") == 0) {
    float s = 0;
    for (int r = 0; r < N; ++r) s += value(r, i, k);
    return s;
  }
  if (strcmp(name, "all_gather") == 0) return value(i / block, i % block, k);
  if (strcmp(name, "reduce_scatter") == 0) {
    float s = 0;
    for (int r = 0; r < N; ++r) s += value(r, R * block + i, k);
    return s;
  }
  if (strcmp(name, "broadcast") == 0) return value(0, i, k);
  if (strcmp(name, "all_to_all") == 0) return value(i / block, R * block + i % block, k);
  return value((R + N - 1) % N, i, k); /* send_recv */
}

/* Device memory from cudaMalloc, as torch and vLLM capture on; the values go through host
 * arrays. */
static float* device_floats(void) {
  void* p = NULL;
  if (cudaMalloc(&p, kCount * sizeof(float)) != cudaSuccess) exit(101);
  return (float*)p;
}

static void capture_and_replay(const char* name, enqueue_fn enqueue, int outCount) {
  float *in = device_floats(), *out = device_floats();
  float* hostIn = malloc(kCount * sizeof(float));
  float* hostOut = malloc(kCount * sizeof(float));
  if (!hostIn || !hostOut) exit(101);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess, "begin");
  enqueue(in, out);
  EXPECT(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "%s: end capture", name);
  EXPECT(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "%s: instantiate", name);
  for (int k = 0; k < kReplays; ++k) {
    for (int i = 0; i < kCount; ++i) hostIn[i] = value(R, i, k);
    test_copy(in, hostIn, kCount * sizeof(float));
    EXPECT(cudaMemset(out, 0, kCount * sizeof(float)) == cudaSuccess, "%s: clear", name);
    test_sync();
    EXPECT(cudaGraphLaunch(exec, stream) == cudaSuccess, "%s: launch", name);
    EXPECT(cudaStreamSynchronize(stream) == cudaSuccess, "%s: sync", name);
    test_copy(hostOut, out, kCount * sizeof(float));
    for (int i = 0; i < outCount; ++i) {
      if (hostOut[i] != expected(name, i, k)) {
        EXPECT(0, "%s replay %d [%d]: %g, want %g", name, k, i, hostOut[i], expected(name, i, k));
        break;
      }
    }
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(in);
  cudaFree(out);
  free(hostIn);
  free(hostOut);
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, N, id, R));
  int dev = -1;
  NCCLCHECK(ncclCommCuDevice(comm, &dev));
  EXPECT(dev >= 0, "communicator on device %d (not a GPU communicator)", dev);
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  capture_and_replay("all_reduce", all_reduce, kCount);
  capture_and_replay("all_gather", all_gather, kCount / N * N);
  capture_and_replay("reduce_scatter", reduce_scatter, kCount / N);
  capture_and_replay("broadcast", broadcast, kCount);
  capture_and_replay("all_to_all", all_to_all, kCount / N * N);
  capture_and_replay("send_recv", send_recv, kCount);
  /* A window on ncclMemAlloc memory left registered: destroying the communicator releases the
   * mapping; the memory is freed after it, then the device is reset. */
  void* winMem = NULL;
  ncclWindow_t win = NULL;
  NCCLCHECK(ncclMemAlloc(&winMem, 1 << 20));
  NCCLCHECK(ncclCommWindowRegister(comm, winMem, 1 << 20, &win, NCCL_WIN_COLL_SYMMETRIC));
  NCCLCHECK(ncclAllReduce(winMem, winMem, (1 << 20) / 4, ncclFloat32, ncclSum, comm, stream));
  EXPECT(cudaStreamSynchronize(stream) == cudaSuccess, "window allreduce");
  NCCLCHECK(ncclCommDestroy(comm));
  cudaStreamDestroy(stream);
  NCCLCHECK(ncclMemFree(winMem));
  EXPECT(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset after destroy");
  printf("rank %d graph_capture: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed",
         g_failures);
  return g_failures ? 1 : 0;
}
