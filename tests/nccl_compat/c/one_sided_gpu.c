/* NCCL 2.31's one-sided calls on windows of device memory (GPU only; built with NCCL_TEST_GPU),
 * each enqueued on a stream. Two windows, one on ncclMemAlloc's memory and one on cudaMalloc's:
 * the signals are the communicator's, so one wait covers puts into either.
 *   ring:    a ring of ncclPutSignal into both windows and a bare ncclSignal, then one wait for
 *            the three signals from the previous rank, the data read by a copy enqueued after
 *            the wait; every rank putting to every rank (itself included); ncclSignal alone as a
 *            barrier; the ring captured in a CUDA graph and replayed 3 times with new data; the
 *            eager ring again after the replays (the sequence numbers live on the GPU); each
 *            refusal with its last error. Every value is checked exactly.
 *   timeout: a communicator split off with RCCLX_TIMEOUT_MS=2000 waits for a signal nobody
 *            sends: the wait ends without trapping, the next calls fail with ncclRemoteError
 *            naming the rank, the peer and the signals expected and seen, its collectives still
 *            run, and after it is destroyed the first communicator's ring works.
 * Usage: one_sided_gpu RANK NRANKS [ring|timeout] */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "nccl_test.h"

#ifndef NCCL_TEST_GPU
#error one_sided_gpu.c needs NCCL_TEST_GPU (CUDA)
#endif

/* K: the ints of a put, so that a put spans several of the copy's blocks and ends in a partial
 * 16-byte word, and most regions start off a 16-byte boundary (the copy's byte path). */
enum { K = 24 * 1024 + 3, SETS = 4, REPLAYS = 3 };
enum { SET_EAGER = 0, SET_GRAPH = 1, SET_AFTER = 2, SET_ALL_PAIRS = 3 };

static int R, N, NEXT, PREV;
static ncclComm_t comm;
static cudaStream_t stream;
static int32_t *memA, *memB;               /* the windows' device memory */
static ncclWindow_t winA, winB;            /* over memA (ncclMemAlloc), memB (cudaMalloc) */
static int32_t *srcA, *srcB, *outA, *outB; /* K elements each, device memory */

#define CUDACHECK(call)                                                              \
  do {                                                                               \
    cudaError_t e_ = (call);                                                         \
    if (e_ != cudaSuccess) {                                                         \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", g_rank, __FILE__, __LINE__, #call, \
              cudaGetErrorString(e_));                                               \
      exit(105);                                                                     \
    }                                                                                \
  } while (0)

/* Element k of what `sender` puts into window `which` (0: A, 1: B) in round `round`. */
static int32_t value(int sender, int round, int which, int k) {
  return ((sender * 32 + round) * 2 + which) * 32768 + k;
}

/* Byte offset of `sender`'s region of set `set` in a window: each region is written by one put
 * sequence only, so no later set's put races with an earlier set's check. */
static size_t offset(int set, int sender) {
  return ((size_t)set * N + sender) * K * sizeof(int32_t);
}

static size_t window_bytes(void) { return offset(SETS, 0); }

static int32_t* device_ints(size_t count) {
  void* p = NULL;
  CUDACHECK(cudaMalloc(&p, count * sizeof(int32_t)));
  return (int32_t*)p;
}

/* Fills srcA and srcB with this rank's values of `round`, in stream order. */
static void fill_sources(int round) {
  int32_t h[2][K];
  for (int k = 0; k < K; ++k) {
    h[0][k] = value(R, round, 0, k);
    h[1][k] = value(R, round, 1, k);
  }
  CUDACHECK(cudaMemcpyAsync(srcA, h[0], sizeof h[0], cudaMemcpyHostToDevice, stream));
  CUDACHECK(cudaMemcpyAsync(srcB, h[1], sizeof h[1], cudaMemcpyHostToDevice, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
}

/* Checks K elements at `dev` (device memory) against `sender`'s values of `round`. */
static void check_ints(const int32_t* dev, int sender, int round, int which, const char* what) {
  int32_t h[K];
  CUDACHECK(cudaMemcpy(h, dev, sizeof h, cudaMemcpyDeviceToHost));
  for (int k = 0; k < K; ++k) {
    if (h[k] != value(sender, round, which, k)) {
      EXPECT(0, "%s: window %c from rank %d [%d] = %d, want %d", what, 'A' + which, sender, k, h[k],
             value(sender, round, which, k));
      return;
    }
  }
}

static void wait_for(int peer, int opCnt, ncclComm_t c) {
  ncclWaitSignalDesc_t d = {opCnt, peer, 0, 0};
  NCCLCHECK(ncclWaitSignal(1, &d, c, stream));
}

/* Every rank's stream drained: no rank puts again into a region its peer has not read yet. */
static void barrier(ncclComm_t c) {
  CUDACHECK(cudaStreamSynchronize(stream));
  NCCLCHECK(ncclAllReduce(outA, outA, 1, ncclInt32, ncclSum, c, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
}

/* The ring, eager: puts into both windows of the next rank and a bare signal, then one wait for
 * the previous rank's three signals; copies enqueued after the wait read what arrived. */
static void eager_ring(int set, int round) {
  fill_sources(round);
  NCCLCHECK(ncclPutSignal(srcA, K, ncclInt32, NEXT, winA, offset(set, R), 0, 0, 0, comm, stream));
  NCCLCHECK(ncclPutSignal(srcB, K, ncclInt32, NEXT, winB, offset(set, R), 0, 0, 0, comm, stream));
  NCCLCHECK(ncclSignal(NEXT, 0, 0, 0, comm, stream));
  wait_for(PREV, 3, comm);
  const size_t at = offset(set, PREV) / sizeof(int32_t);
  CUDACHECK(
      cudaMemcpyAsync(outA, memA + at, K * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
  CUDACHECK(
      cudaMemcpyAsync(outB, memB + at, K * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  check_ints(outA, PREV, round, 0, "eager ring");
  check_ints(outB, PREV, round, 1, "eager ring");
  barrier(comm);
}

/* Every rank puts to every rank (itself included), in two pieces and an empty put, then signals
 * it once more alone; one wait with a descriptor per rank (a rank's descriptors add up). */
static void all_pairs(int round) {
  fill_sources(round);
  ncclWaitSignalDesc_t descs[2 * 16];
  for (int p = 0; p < N; ++p) {
    const size_t at = offset(SET_ALL_PAIRS, R);
    NCCLCHECK(ncclPutSignal(srcA, 100, ncclInt32, p, winA, at, 0, 0, 0, comm, stream));
    NCCLCHECK(ncclPutSignal(srcA + 100, (K - 100) * 4, ncclUint8, p, winA, at + 400, 0, 0, 0, comm,
                            stream));
    NCCLCHECK(ncclPutSignal(NULL, 0, ncclFloat64, p, winB, 0, 0, 0, 0, comm, stream));
    NCCLCHECK(ncclSignal(p, 0, 0, 0, comm, stream));
    descs[2 * p].opCnt = 1;
    descs[2 * p + 1].opCnt = 3;
    descs[2 * p].peer = descs[2 * p + 1].peer = p;
    descs[2 * p].sigIdx = descs[2 * p + 1].sigIdx = 0;
    descs[2 * p].ctx = descs[2 * p + 1].ctx = 0;
  }
  NCCLCHECK(ncclWaitSignal(2 * N, descs, comm, stream));
  for (int p = 0; p < N; ++p) {
    CUDACHECK(cudaMemcpyAsync(outA, memA + offset(SET_ALL_PAIRS, p) / sizeof(int32_t),
                              K * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
    CUDACHECK(cudaStreamSynchronize(stream));
    check_ints(outA, p, round, 0, "all pairs");
  }
  barrier(comm);
}

/* ncclSignal alone, every rank to every rank, waited for: a barrier on the streams. A count gone
 * wrong would leave a later wait short of a signal (a timeout, refused by the next call). */
static void signal_barrier(void) {
  ncclWaitSignalDesc_t descs[16];
  for (int p = 0; p < N; ++p) {
    NCCLCHECK(ncclSignal(p, 0, 0, 0, comm, stream));
    descs[p].opCnt = 1;
    descs[p].peer = p;
    descs[p].sigIdx = descs[p].ctx = 0;
  }
  NCCLCHECK(ncclWaitSignal(N, descs, comm, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
}

/* The ring captured once (puts into both windows, the wait, the copies after it) and replayed
 * with new sources each time: the graph's signals and waits take fresh numbers every replay. */
static void graph_ring(void) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  const size_t at = offset(SET_GRAPH, PREV) / sizeof(int32_t);
  CUDACHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  NCCLCHECK(
      ncclPutSignal(srcA, K, ncclInt32, NEXT, winA, offset(SET_GRAPH, R), 0, 0, 0, comm, stream));
  NCCLCHECK(
      ncclPutSignal(srcB, K, ncclInt32, NEXT, winB, offset(SET_GRAPH, R), 0, 0, 0, comm, stream));
  wait_for(PREV, 2, comm);
  CUDACHECK(
      cudaMemcpyAsync(outA, memA + at, K * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
  CUDACHECK(
      cudaMemcpyAsync(outB, memB + at, K * sizeof(int32_t), cudaMemcpyDeviceToDevice, stream));
  CUDACHECK(cudaStreamEndCapture(stream, &graph));
  CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < REPLAYS; ++replay) {
    const int round = 10 + replay;
    fill_sources(round);
    CUDACHECK(cudaMemsetAsync(outA, 0, K * sizeof(int32_t), stream));
    CUDACHECK(cudaMemsetAsync(outB, 0, K * sizeof(int32_t), stream));
    CUDACHECK(cudaGraphLaunch(exec, stream));
    CUDACHECK(cudaStreamSynchronize(stream));
    check_ints(outA, PREV, round, 0, "graph replay");
    check_ints(outB, PREV, round, 1, "graph replay");
    barrier(comm);
  }
  CUDACHECK(cudaGraphExecDestroy(exec));
  CUDACHECK(cudaGraphDestroy(graph));
}

static void refusals(void) {
  int32_t host[4] = {0};
  EXPECT_ERROR(ncclPutSignal(srcA, K, ncclInt32, NEXT, winA, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "ncclPutSignal: stream is NULL but peerWin ");
  EXPECT_ERROR(ncclPutSignal(host, 4, ncclInt32, NEXT, winA, 0, 0, 0, 0, comm, stream),
               ncclInvalidUsage, "is host memory but peerWin ");
  EXPECT_ERROR(
      ncclPutSignal(srcA, 2, ncclInt32, NEXT, winB, window_bytes() - 4, 0, 0, 0, comm, stream),
      ncclInvalidArgument, "do not fit the window's");
  EXPECT_ERROR(ncclPutSignal(srcA, 1, ncclInt32, NEXT, winB, 0, 1, 0, 0, comm, stream),
               ncclInvalidArgument, "sigIdx 1 is not 0");
  EXPECT_ERROR(ncclSignal(N, 0, 0, 0, comm, stream), ncclInvalidArgument, "ncclSignal: peer");
  ncclWaitSignalDesc_t d = {1, PREV, 0, 0};
  /* A NULL stream selects the host-memory windows' signals, which this communicator lacks. */
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidUsage,
               "calls on device-memory windows take a stream");
  NCCLCHECK(ncclGroupStart());
  EXPECT_ERROR(ncclSignal(NEXT, 0, 0, 0, comm, stream), ncclInvalidUsage, "inside ncclGroupStart");
  NCCLCHECK(ncclGroupEnd());
}

/* A communicator with a short timeout waits for a signal nobody sends. */
static void timeout_then_usable(void) {
  char saved[64] = "";
  const char* old = getenv("RCCLX_TIMEOUT_MS");
  if (old) snprintf(saved, sizeof saved, "%s", old);
  setenv("RCCLX_TIMEOUT_MS", "2000", 1); /* read when a communicator is made */
  ncclComm_t sub = NULL;
  NCCLCHECK(ncclCommSplit(comm, 0, R, &sub, NULL));
  if (old) setenv("RCCLX_TIMEOUT_MS", saved, 1);
  void* mem = NULL;
  ncclWindow_t win = NULL;
  NCCLCHECK(ncclMemAlloc(&mem, window_bytes()));
  NCCLCHECK(ncclCommWindowRegister(sub, mem, window_bytes(), &win, NCCL_WIN_DEFAULT));

  wait_for(NEXT, 1, sub);
  CUDACHECK(cudaStreamSynchronize(stream)); /* the wait ended, without trapping */
  CUDACHECK(cudaGetLastError());
  char want[200];
  snprintf(want, sizeof want,
           "rank %d's wait_signal timed out after 2000 ms waiting for a signal from rank %d "
           "(expected signal 1, saw 0",
           R, NEXT);
  EXPECT_ERROR(ncclSignal(NEXT, 0, 0, 0, sub, stream), ncclRemoteError, want);
  printf("rank %d timeout: %s\n", R, ncclGetLastError(NULL));
  EXPECT_ERROR(ncclPutSignal(srcA, K, ncclInt32, NEXT, win, 0, 0, 0, 0, sub, stream),
               ncclRemoteError, "the one-sided GPU channel failed");
  ncclWaitSignalDesc_t d = {1, NEXT, 0, 0};
  EXPECT_ERROR(ncclWaitSignal(1, &d, sub, stream), ncclRemoteError, want);
  ncclResult_t async = ncclSuccess;
  NCCLCHECK(ncclCommGetAsyncError(sub, &async));
  EXPECT(async == ncclRemoteError, "ncclCommGetAsyncError after the timeout: %d", (int)async);

  /* The communicator's collectives still run. */
  int32_t one = R + 1, sum = 0;
  CUDACHECK(cudaMemcpyAsync(outB, &one, sizeof one, cudaMemcpyHostToDevice, stream));
  NCCLCHECK(ncclAllReduce(outB, outB, 1, ncclInt32, ncclSum, sub, stream));
  CUDACHECK(cudaStreamSynchronize(stream));
  CUDACHECK(cudaMemcpy(&sum, outB, sizeof sum, cudaMemcpyDeviceToHost));
  EXPECT(sum == N * (N + 1) / 2, "all_reduce after the timeout: %d, want %d", sum, N * (N + 1) / 2);
  NCCLCHECK(ncclCommWindowDeregister(sub, win));
  NCCLCHECK(ncclCommDestroy(sub));
  NCCLCHECK(ncclMemFree(mem));

  /* And the first communicator's one-sided calls, untouched by the failure. */
  eager_ring(SET_EAGER, 0);
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  if (N > 16) return 2;
  const char* mode = argc > 3 ? argv[3] : "ring";
  NEXT = (R + 1) % N;
  PREV = (R + N - 1) % N;
  NCCLCHECK(ncclCommInitRank(&comm, N, test_unique_id(), R));
  int dev = -1;
  NCCLCHECK(ncclCommCuDevice(comm, &dev));
  EXPECT(dev >= 0, "communicator on device %d (not a GPU communicator)", dev);
  CUDACHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  NCCLCHECK(ncclMemAlloc((void**)&memA, window_bytes()));
  memB = device_ints(window_bytes() / sizeof(int32_t));
  CUDACHECK(cudaMemset(memA, 0, window_bytes()));
  CUDACHECK(cudaMemset(memB, 0, window_bytes()));
  CUDACHECK(cudaDeviceSynchronize());
  NCCLCHECK(ncclCommWindowRegister(comm, memA, window_bytes(), &winA, NCCL_WIN_DEFAULT));
  NCCLCHECK(ncclCommWindowRegister(comm, memB, window_bytes(), &winB, NCCL_WIN_COLL_SYMMETRIC));
  srcA = device_ints(K);
  srcB = device_ints(K);
  outA = device_ints(K);
  outB = device_ints(K);

  if (strcmp(mode, "timeout") == 0) {
    timeout_then_usable();
  } else {
    eager_ring(SET_EAGER, 0);
    all_pairs(1);
    signal_barrier();
    graph_ring();
    eager_ring(SET_AFTER, 20);
    refusals();
  }

  NCCLCHECK(ncclCommWindowDeregister(comm, winA));
  NCCLCHECK(ncclCommWindowDeregister(comm, winB));
  NCCLCHECK(ncclCommDestroy(comm));
  CUDACHECK(cudaStreamDestroy(stream));
  NCCLCHECK(ncclMemFree(memA));
  cudaFree(memB);
  cudaFree(srcA);
  cudaFree(srcB);
  cudaFree(outA);
  cudaFree(outB);
  printf("rank %d one_sided_gpu %s: %s (%d failures)\n", R, mode, g_failures ? "FAILED" : "passed",
         g_failures);
  return g_failures ? 1 : 0;
}
