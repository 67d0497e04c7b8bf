/* One-sided puts on device-memory windows against a plain device-to-device copy of the same
 * size, in one run: per size, a ring where every rank ncclPutSignal()s its buffer into the next
 * rank's window and ncclWaitSignal()s for the previous rank's signal after each put; a burst of
 * puts with one wait at the end; and cudaMemcpyAsync of the same bytes into a local buffer. Each
 * eager (a block of calls, then one synchronize) and in a CUDA graph (a block captured once,
 * replayed). Blocks of the kinds alternate so drift hits all alike; medians per operation. Rank 0
 * prints the table and the ratios to the copy; every rank checks that the previous rank's bytes
 * arrived.
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

/* A block of OPS_PER_BLOCK operations of each kind, as enqueued eagerly or captured once. */
static void ring_block(struct bench* b, size_t bytes) {
  ncclWaitSignalDesc_t from_prev = {1, b->prev, 0, 0};
  for (int i = 0; i < OPS_PER_BLOCK; ++i) {
    NCCLCHECK(
        ncclPutSignal(b->src, bytes, ncclUint8, b->next, b->win, 0, 0, 0, 0, b->comm, b->stream));
    NCCLCHECK(ncclWaitSignal(1, &from_prev, b->comm, b->stream));
  }
}

/* Puts with their signals back to back, the previous rank's signals waited for once at the end:
 * what a put costs when nothing waits on it at once. */
static void burst_block(struct bench* b, size_t bytes) {
  ncclWaitSignalDesc_t from_prev = {OPS_PER_BLOCK, b->prev, 0, 0};
  for (int i = 0; i < OPS_PER_BLOCK; ++i) {
    NCCLCHECK(
        ncclPutSignal(b->src, bytes, ncclUint8, b->next, b->win, 0, 0, 0, 0, b->comm, b->stream));
  }
  NCCLCHECK(ncclWaitSignal(1, &from_prev, b->comm, b->stream));
}

static void copy_block(struct bench* b, size_t bytes) {
  for (int i = 0; i < OPS_PER_BLOCK; ++i) {
    CUDACHECK(cudaMemcpyAsync(b->local, b->src, bytes, cudaMemcpyDeviceToDevice, b->stream));
  }
}

typedef void (*block_fn)(struct bench*, size_t);
enum { KINDS = 3 }; /* ring, burst, copy */
static const block_fn kBlocks[KINDS] = {ring_block, burst_block, copy_block};

/* Every rank's stream drained, then a collective: the next block starts together. */
static void barrier(struct bench* b) {
  CUDACHECK(cudaStreamSynchronize(b->stream));
  NCCLCHECK(ncclAllReduce(b->local, b->local, 1, ncclInt32, ncclMax, b->comm, b->stream));
  CUDACHECK(cudaStreamSynchronize(b->stream));
}

/* Microseconds per operation of one block, enqueued now or replayed from `graph`. */
static float block_us(struct bench* b, block_fn block, size_t bytes, cudaGraphExec_t graph) {
  barrier(b);
  CUDACHECK(cudaEventRecord(b->start, b->stream));
  if (graph) {
    CUDACHECK(cudaGraphLaunch(graph, b->stream));
  } else {
    block(b, bytes);
  }
  CUDACHECK(cudaEventRecord(b->stop, b->stream));
  CUDACHECK(cudaEventSynchronize(b->stop));
  float ms = 0;
  CUDACHECK(cudaEventElapsedTime(&ms, b->start, b->stop));
  return ms * 1000.0f / OPS_PER_BLOCK;
}

static cudaGraphExec_t capture(struct bench* b, block_fn block, size_t bytes) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDACHECK(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeGlobal));
  block(b, bytes);
  CUDACHECK(cudaStreamEndCapture(b->stream, &graph));
  CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDACHECK(cudaGraphDestroy(graph));
  return exec;
}

static int by_value(const void* x, const void* y) {
  const float a = *(const float*)x, c = *(const float*)y;
  return (a > c) - (a < c);
}

/* Median microseconds per operation of each kind, blocks alternating between the kinds. */
static void time_kinds(struct bench* b, size_t bytes, int graphed, float median[KINDS]) {
  cudaGraphExec_t graphs[KINDS] = {NULL, NULL, NULL};
  float times[KINDS][BLOCKS];
  for (int k = 0; k < KINDS && graphed; ++k) graphs[k] = capture(b, kBlocks[k], bytes);
  for (int i = 0; i < WARMUP_BLOCKS + BLOCKS; ++i) {
    for (int k = 0; k < KINDS; ++k) {
      const float t = block_us(b, kBlocks[k], bytes, graphs[k]);
      if (i >= WARMUP_BLOCKS) times[k][i - WARMUP_BLOCKS] = t;
    }
  }
  for (int k = 0; k < KINDS; ++k) {
    if (graphed) CUDACHECK(cudaGraphExecDestroy(graphs[k]));
    qsort(times[k], BLOCKS, sizeof(float), by_value);
    median[k] = times[k][BLOCKS / 2];
  }
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
        "# ring: ncclPutSignal to the next rank, then ncclWaitSignal for the previous one's;\n"
        "# burst: the puts back to back, one wait for them all per block; copy:\n"
        "# cudaMemcpyAsync device-to-device of the same bytes. %d ranks on %d GPU(s); median of\n"
        "# %d blocks of %d operations, microseconds per operation; x = time / copy's\n",
        nranks, gpus, BLOCKS, OPS_PER_BLOCK);
    printf("%10s %5s %9s %9s %9s %7s %7s\n", "bytes", "mode", "ring", "burst", "copy", "ring_x",
           "burst_x");
  }
  int bad = 0;
  for (size_t bytes = minbytes; bytes <= maxbytes; bytes *= 4) {
    for (int graphed = 0; graphed <= 1; ++graphed) {
      float t[KINDS];
      CUDACHECK(cudaMemsetAsync(b.winmem, 0, bytes, b.stream));
      time_kinds(&b, bytes, graphed, t);
      bad += !arrived(&b, bytes);
      if (rank == 0) {
        printf("%10zu %5s %9.2f %9.2f %9.2f %7.2f %7.2f\n", bytes, graphed ? "graph" : "eager",
               t[0], t[1], t[2], t[0] / t[2], t[1] / t[2]);
        fflush(stdout);
      }
    }
  }
  barrier(&b);
  NCCLCHECK(ncclCommWindowDeregister(b.comm, b.win));
  NCCLCHECK(ncclMemFree(b.winmem));
  NCCLCHECK(ncclCommDestroy(b.comm));
  printf("rank %d: %s\n", rank, bad ? "WRONG DATA" : "data checked");
  return bad ? 4 : 0;
}
