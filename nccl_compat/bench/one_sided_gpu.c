/* One-sided puts on device-memory windows against a plain device-to-device copy of the same
 * size, in one run: per size, a ring where every rank ncclPutSignal()s its buffer into the next
 * rank's window and ncclWaitSignal()s for the previous rank's signal, against cudaMemcpyAsync of
 * the same bytes into a local buffer; both eager (a burst of calls, then one synchronize) and in
 * a CUDA graph (a burst captured once, replayed). Blocks of the two alternate so drift hits both
 * alike; medians per operation. Rank 0 prints the table and the ratios; every rank checks that
 * the previous rank's bytes arrived.
 *
 * Built against the NCCL headers and library only (no internal header), one process per rank:
 *   cc -O2 -std=c11 -I$(python -m rcclx_nccl --includedir) one_sided_gpu.c -o one_sided_gpu_bench \
 *      -L$(python -m rcclx_nccl --libdir) -l:libnccl.so.2 -L$CUDA/lib64 -lcudart
 *   for r in 0 1; do RANK=$r WORLD_SIZE=2 NCCL_COMM_ID=127.0.0.1:29600 ./one_sided_gpu_bench & \
 *   done; wait
 * Ranks beyond the GPU count share GPUs (rank % GPUs): run them under NVIDIA MPS so their kernels
 * run at once. Optional arguments: MINBYTES MAXBYTES (default 1024 67108864), factor 4. */
#define _POSIX_C_SOURCE 200809L

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl.h"

enum { OPS_PER_BLOCK = 20, BLOCKS = 7, WARMUP_BLOCKS = 2 };

static int rank = -1, nranks = 0;

#define CUDACHECK(call)                                                            \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", rank, __FILE__, __LINE__, #call, \
              cudaGetErrorString(e_));                                             \
      exit(2);                                                                     \
    }                                                                              \
  } while (0)

#define NCCLCHECK(call)                                                                 \
  do {                                                                                  \
    ncclResult_t r_ = (call);                                                           \
    if (r_ != ncclSuccess) {                                                            \
      fprintf(stderr, "rank %d: %s:%d: %s: %s (%s)\n", rank, __FILE__, __LINE__, #call, \
              ncclGetErrorString(r_), ncclGetLastError(NULL));                          \
      exit(3);                                                                          \
    }                                                                                   \
  } while (0)

/* Everything the two columns share: the stream, the buffers, the window. */
struct bench {
  ncclComm_t comm;
  cudaStream_t stream;
  cudaEvent_t start, stop;
  void* src;    /* this rank's bytes (device memory) */
  void* local;  /* the copy's destination */
  void* winmem; /* the window's memory (ncclMemAlloc) */
  ncclWindow_t win;
  int next, prev;
};

static void ring_step(struct bench* b, size_t bytes) {
  ncclWaitSignalDesc_t from_prev = {1, b->prev, 0, 0};
  NCCLCHECK(
      ncclPutSignal(b->src, bytes, ncclUint8, b->next, b->win, 0, 0, 0, 0, b->comm, b->stream));
  NCCLCHECK(ncclWaitSignal(1, &from_prev, b->comm, b->stream));
}

static void copy_step(struct bench* b, size_t bytes) {
  CUDACHECK(cudaMemcpyAsync(b->local, b->src, bytes, cudaMemcpyDeviceToDevice, b->stream));
}

typedef void (*step_fn)(struct bench*, size_t);

/* Every rank's stream drained, then a collective: the next block starts together. */
static void barrier(struct bench* b) {
  CUDACHECK(cudaStreamSynchronize(b->stream));
  NCCLCHECK(ncclAllReduce(b->local, b->local, 1, ncclInt32, ncclMax, b->comm, b->stream));
  CUDACHECK(cudaStreamSynchronize(b->stream));
}

/* Microseconds per operation of one block: OPS_PER_BLOCK eager calls, or one replay of a graph
 * holding as many. */
static float block_us(struct bench* b, step_fn step, size_t bytes, cudaGraphExec_t graph) {
  barrier(b);
  CUDACHECK(cudaEventRecord(b->start, b->stream));
  if (graph) {
    CUDACHECK(cudaGraphLaunch(graph, b->stream));
  } else {
    for (int i = 0; i < OPS_PER_BLOCK; ++i) step(b, bytes);
  }
  CUDACHECK(cudaEventRecord(b->stop, b->stream));
  CUDACHECK(cudaEventSynchronize(b->stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
  return ms * 1000.0f / OPS_PER_BLOCK;
}

static cudaGraphExec_t capture(struct bench* b, step_fn step, size_t bytes) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDACHECK(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < OPS_PER_BLOCK; ++i) step(b, bytes);
  CUDACHECK(cudaStreamEndCapture(b->stream, &graph));
  CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDACHECK(cudaGraphDestroy(graph));
  return exec;
}

static int by_value(const void* x, const void* y) {
  const float a = *(const float*)x, c = *(const float*)y;
  return (a > c) - (a < c);
}

/* Median microseconds per operation of the ring and the copy, blocks alternating. */
static void time_pair(struct bench* b, size_t bytes, int graphed, float* ring_us, float* copy_us) {
  cudaGraphExec_t ring_graph = graphed ? capture(b, ring_step, bytes) : NULL;
  cudaGraphExec_t copy_graph = graphed ? capture(b, copy_step, bytes) : NULL;
  float ring[BLOCKS], copy[BLOCKS];
  for (int i = 0; i < WARMUP_BLOCKS + BLOCKS; ++i) {
    const float r = block_us(b, ring_step, bytes, ring_graph);
    const float c = block_us(b, copy_step, bytes, copy_graph);
    if (i >= WARMUP_BLOCKS) {
      ring[i - WARMUP_BLOCKS] = r;
      copy[i - WARMUP_BLOCKS] = c;
    }
  }
  if (graphed) {
    CUDACHECK(cudaGraphExecDestroy(ring_graph));
    CUDACHECK(cudaGraphExecDestroy(copy_graph));
  }
  qsort(ring, BLOCKS, sizeof(float), by_value);
  qsort(copy, BLOCKS, sizeof(float), by_value);
  *ring_us = ring[BLOCKS / 2];
  *copy_us = copy[BLOCKS / 2];
}

/* The previous rank's bytes (value prev + 1) are in this rank's window: first and last byte. */
static int arrived(struct bench* b, size_t bytes) {
  unsigned char first = 0, last = 0;
  CUDACHECK(cudaStreamSynchronize(b->stream));
  CUDACHECK(cudaMemcpy(&first, b->winmem, 1, cudaMemcpyDeviceToHost));
  CUDACHECK(cudaMemcpy(&last, (char*)b->winmem + bytes - 1, 1, cudaMemcpyDeviceToHost));
  const unsigned char want = (unsigned char)(b->prev + 1);
  if (first == want && last == want) return 1;
  fprintf(stderr, "rank %d: %zu bytes from rank %d: window holds %u..%u, want %u\n", rank, bytes,
          b->prev, first, last, want);
  return 0;
}

static int env_int(const char* name) {
  const char* v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "one_sided_gpu: %s is not set (RANK, WORLD_SIZE and NCCL_COMM_ID are)\n", name);
    exit(1);
  }
  return atoi(v);
}

int main(int argc, char** argv) {
  rank = env_int("RANK");
  nranks = env_int("WORLD_SIZE");
  const size_t minbytes = argc > 1 ? strtoull(argv[1], NULL, 0) : 1024;
  const size_t maxbytes = argc > 2 ? strtoull(argv[2], NULL, 0) : (size_t)64 << 20;
  if (minbytes == 0 || maxbytes < minbytes) {
    fprintf(stderr, "one_sided_gpu: MINBYTES %zu and MAXBYTES %zu: need 0 < MINBYTES <= MAXBYTES\n",
            minbytes, maxbytes);
    return 1;
  }
  int gpus = 0;
  CUDACHECK(cudaGetDeviceCount(&gpus));
  CUDACHECK(cudaSetDevice(rank % gpus));

  struct bench b;
  memset(&b, 0, sizeof b);
  b.next = (rank + 1) % nranks;
  b.prev = (rank + nranks - 1) % nranks;
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id)); /* from NCCL_COMM_ID: the same on every rank */
  NCCLCHECK(ncclCommInitRank(&b.comm, nranks, id, rank));
  CUDACHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
  CUDACHECK(cudaEventCreate(&b.start));
  CUDACHECK(cudaEventCreate(&b.stop));
  CUDACHECK(cudaMalloc(&b.src, maxbytes));
  CUDACHECK(cudaMalloc(&b.local, maxbytes));
  CUDACHECK(cudaMemset(b.src, rank + 1, maxbytes));
  NCCLCHECK(ncclMemAlloc(&b.winmem, maxbytes));
  CUDACHECK(cudaMemset(b.winmem, 0, maxbytes));
  CUDACHECK(cudaDeviceSynchronize());
  NCCLCHECK(ncclCommWindowRegister(b.comm, b.winmem, maxbytes, &b.win, NCCL_WIN_DEFAULT));

  if (rank == 0) {
    printf(
        "# one-sided ring (ncclPutSignal to the next rank + ncclWaitSignal from the previous)\n"
        "# against cudaMemcpyAsync device-to-device of the same bytes; %d ranks on %d GPU(s);\n"
        "# median of %d blocks of %d operations, microseconds per operation\n",
        nranks, gpus, BLOCKS, OPS_PER_BLOCK);
    printf("%12s  %11s %11s %7s  %11s %11s %7s\n", "bytes", "eager_put", "eager_copy", "ratio",
           "graph_put", "graph_copy", "ratio");
  }
  int bad = 0;
  for (size_t bytes = minbytes; bytes <= maxbytes; bytes *= 4) {
    float eager_ring, eager_copy, graph_ring, graph_copy;
    time_pair(&b, bytes, 0, &eager_ring, &eager_copy);
    bad += !arrived(&b, bytes);
    CUDACHECK(cudaMemsetAsync(b.winmem, 0, bytes, b.stream));
    time_pair(&b, bytes, 1, &graph_ring, &graph_copy);
    bad += !arrived(&b, bytes);
    if (rank == 0) {
      printf("%12zu  %11.2f %11.2f %7.2f  %11.2f %11.2f %7.2f\n", bytes, eager_ring, eager_copy,
             eager_ring / eager_copy, graph_ring, graph_copy, graph_ring / graph_copy);
      fflush(stdout);
    }
  }
  barrier(&b);
  NCCLCHECK(ncclCommWindowDeregister(b.comm, b.win));
  NCCLCHECK(ncclMemFree(b.winmem));
  NCCLCHECK(ncclCommDestroy(b.comm));
  printf("rank %d: %s\n", rank, bad ? "WRONG DATA" : "data checked");
  return bad ? 4 : 0;
}
