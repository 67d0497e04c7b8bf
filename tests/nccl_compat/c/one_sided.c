/* NCCL 2.31's one-sided calls (ncclPutSignal, ncclSignal, ncclWaitSignal) on windows of host
 * memory, which take the NULL stream: a ring of put + signal then wait, several puts and a bare
 * signal waited for at once, every rank putting to every rank (itself included) and one wait over
 * all of them, empty puts, a sender running far ahead of its peer's waits (more than the 1024
 * records it may keep outstanding), and each refusal with its last error. What a rank writes to
 * its own window outside the ranges peers put into survives the waits. A call on a stream is one
 * for device-memory windows: on a host-memory communicator it is refused, its last error (printed
 * for the test to check) saying why the communicator has no GPU. With NCCL_TEST_GPU the
 * communicator is a GPU one and the window still host memory: the same calls work, a put from
 * device memory into it is refused, and so is a call on a stream before any device-memory window
 * (one_sided_gpu.c tests those). */
#define _POSIX_C_SOURCE 200809L /* posix_memalign */

#include "nccl_test.h"

static int R, N;
static ncclComm_t comm;

enum { K = 64, PHASES = 3 }; /* a window: PHASES x N regions of K int32 */

/* Element offset of sender s's region of phase p: each region is written by one put sequence
 * only, so no later phase's put races with an earlier phase's check. */
static size_t at(int phase, int sender) { return ((size_t)phase * N + sender) * K; }

static void wait_from(int peer, int opCnt) {
  ncclWaitSignalDesc_t d = {opCnt, peer, 0, 0};
  NCCLCHECK(ncclWaitSignal(1, &d, comm, NULL));
}

static void check_region(const int32_t* w, int phase, int sender, int32_t base, const char* what) {
  const int32_t* r = w + at(phase, sender);
  for (int k = 0; k < K; ++k) {
    if (r[k] != base + k) {
      EXPECT(0, "%s: sender %d [%d] = %d, want %d", what, sender, k, r[k], base + k);
      return;
    }
  }
}

static void ring_and_all_pairs(int32_t* w, ncclWindow_t win) {
  const int next = (R + 1) % N, prev = (R + N - 1) % N;
  int32_t src[K];
  for (int k = 0; k < K; ++k) src[k] = R * 1000 + k;

  /* A ring: put into the next rank's region R, signal, wait for the previous rank. */
  w[at(0, R)] = -7; /* this rank's region of phase 0, written locally: no put touches it */
  NCCLCHECK(
      ncclPutSignal(src, K, ncclInt32, next, win, at(0, R) * sizeof(int32_t), 0, 0, 0, comm, NULL));
  wait_from(prev, 1);
  if (prev != R) check_region(w, 0, prev, prev * 1000, "ring");
  if (prev != R) EXPECT(w[at(0, R)] == -7, "a wait overwrote local data: %d", w[at(0, R)]);

  /* Three puts (the region in three pieces, offsets in bytes) and a signal, waited for at once. */
  for (int k = 0; k < K; ++k) src[k] = R * 1000 + 500 + k;
  NCCLCHECK(ncclPutSignal(src, 10, ncclInt32, next, win, at(1, R) * 4, 0, 0, 0, comm, NULL));
  NCCLCHECK(
      ncclPutSignal(src + 10, 30, ncclInt32, next, win, (at(1, R) + 10) * 4, 0, 0, 0, comm, NULL));
  NCCLCHECK(pncclPutSignal(src + 40, (K - 40) * 4, ncclUint8, next, win, (at(1, R) + 40) * 4, 0, 0,
                           0, comm, NULL));
  NCCLCHECK(ncclSignal(next, 0, 0, 0, comm, NULL));
  wait_from(prev, 4);
  check_region(w, 1, prev, prev * 1000 + 500, "three puts and a signal");

  /* Every rank puts its region into every rank (itself included); one wait over all. */
  ncclWaitSignalDesc_t descs[16];
  for (int k = 0; k < K; ++k) src[k] = R * 1000 + 700 + k;
  for (int p = 0; p < N; ++p) {
    NCCLCHECK(ncclPutSignal(src, K, ncclInt32, p, win, at(2, R) * 4, 0, 0, 0, comm, NULL));
    /* An empty put signals too. */
    NCCLCHECK(ncclPutSignal(NULL, 0, ncclFloat64, p, win, 0, 0, 0, 0, comm, NULL));
    descs[p].opCnt = 2;
    descs[p].peer = p;
    descs[p].sigIdx = descs[p].ctx = 0;
  }
  NCCLCHECK(ncclWaitSignal(N, descs, comm, NULL));
  for (int p = 0; p < N; ++p) check_region(w, 2, p, p * 1000 + 700, "all pairs");
}

/* Rank 0 sends 2500 puts to rank 1, which waits for them in pieces: the sender blocks on the
 * records rank 1 has not yet applied and goes on as it waits. The last put wins. */
static void far_ahead(int32_t* w, ncclWindow_t win) {
  const int n = 2500;
  if (R == 0) {
    for (int32_t i = 0; i < n; ++i) {
      NCCLCHECK(ncclPutSignal(&i, 1, ncclInt32, 1, win, 0, 0, 0, 0, comm, NULL));
    }
  } else if (R == 1) {
    for (int done = 0; done < n; done += 500) wait_from(0, 500);
    EXPECT(w[0] == n - 1, "after %d puts: %d", n, w[0]);
  }
}

/* A call on a stream asks for the signals of device-memory windows: on a host-memory
 * communicator the refusal says why it has no GPU; on a GPU one, that no device-memory window was
 * registered yet; a put from device memory into a host-memory window is refused. */
static void on_a_stream(void) {
  cudaStream_t stream = (cudaStream_t)8;
  ncclWaitSignalDesc_t d = {1, 0, 0, 0};
#ifdef NCCL_TEST_GPU
  EXPECT_ERROR(ncclSignal(0, 0, 0, 0, comm, stream), ncclInvalidUsage,
               "no device-memory window was registered on comm");
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, stream), ncclInvalidUsage,
               "no device-memory window was registered on comm");
#else
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, stream), ncclInvalidUsage,
               "stream 0x8 is not NULL, which enqueues the call on a GPU, but comm is a "
               "host-memory communicator (");
  EXPECT_ERROR(ncclSignal(0, 0, 0, 0, comm, stream), ncclInvalidUsage,
               "host-memory communicator (");
  if (R == 0) printf("refused on a stream: %s\n", ncclGetLastError(NULL));
#endif
}

static void refusals(ncclWindow_t win) {
  int32_t v = 1;
  const size_t bytes = at(PHASES, 0) * sizeof(int32_t);
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 1, 0, 0, comm, NULL), ncclInvalidArgument,
               "ncclPutSignal: sigIdx 1 is not 0");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 0, 2, 0, comm, NULL), ncclInvalidArgument,
               "ctx 2 is not 0");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 0, 0, 4, comm, NULL), ncclInvalidArgument,
               "flags 0x4 has bits set");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, N, win, 0, 0, 0, 0, comm, NULL), ncclInvalidArgument,
               "peer");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, bytes - 2, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "do not fit the window's");
  EXPECT_ERROR(ncclPutSignal(&v, (size_t)-1, ncclInt64, 0, win, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "do not fit the window's");
  EXPECT_ERROR(ncclPutSignal(NULL, 1, ncclInt32, 0, win, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "localbuff is NULL");
  EXPECT_ERROR(ncclPutSignal(&v, 1, (ncclDataType_t)99, 0, win, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "datatype 99");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, NULL, 0, 0, 0, 0, comm, NULL),
               ncclInvalidArgument, "peerWin is NULL");
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 0, 0, 0, comm, (cudaStream_t)8),
               ncclInvalidArgument,
               "stream 0x8 is not NULL: one-sided calls on host-memory windows (peerWin ");
  EXPECT_ERROR(ncclSignal(-1, 0, 0, 0, comm, NULL), ncclInvalidArgument, "ncclSignal: peer -1");
  EXPECT_ERROR(ncclSignal(0, 0, 0, 0, NULL, NULL), ncclInvalidArgument, "comm is NULL");
  ncclWaitSignalDesc_t d = {1, 0, 0, 3};
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidArgument,
               "signalDescs[0].ctx 3 is not 0");
  d.ctx = 0;
  d.opCnt = -2;
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidArgument, "opCnt -2 is negative");
  d.opCnt = 1;
  d.peer = N;
  EXPECT_ERROR(ncclWaitSignal(1, &d, comm, NULL), ncclInvalidArgument, "signalDescs[0].peer");
  EXPECT_ERROR(ncclWaitSignal(1, NULL, comm, NULL), ncclInvalidArgument, "signalDescs is NULL");
  EXPECT_ERROR(ncclWaitSignal(-1, &d, comm, NULL), ncclInvalidArgument, "nDesc -1");
  NCCLCHECK(ncclWaitSignal(0, NULL, comm, NULL));
  NCCLCHECK(ncclGroupStart());
  EXPECT_ERROR(ncclSignal(0, 0, 0, 0, comm, NULL), ncclInvalidUsage, "inside ncclGroupStart");
  NCCLCHECK(ncclGroupEnd());
  on_a_stream();

  /* A communicator without a window has no signals yet. */
  ncclComm_t sub = NULL;
  NCCLCHECK(ncclCommSplit(comm, 0, R, &sub, NULL));
  EXPECT_ERROR(ncclSignal(0, 0, 0, 0, sub, NULL), ncclInvalidUsage,
               "no host-memory window was registered");
  d.peer = 0;
  d.opCnt = 0;
  NCCLCHECK(ncclWaitSignal(1, &d, sub, NULL));
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 0, 0, 0, sub, NULL), ncclInvalidArgument,
               "registered with another communicator");
  NCCLCHECK(ncclCommDestroy(sub));
}

/* The window's host memory: ncclMemAlloc's on a host-memory communicator; on a GPU one,
 * ncclMemAlloc gives device memory, so plain page-aligned host memory. */
static int32_t* window_memory(size_t bytes) {
#ifdef NCCL_TEST_GPU
  void* p = NULL;
  if (posix_memalign(&p, 4096, bytes) != 0) exit(101);
  return (int32_t*)p;
#else
  void* p = NULL;
  NCCLCHECK(ncclMemAlloc(&p, bytes));
  return (int32_t*)p;
#endif
}

static void free_window_memory(int32_t* w) {
#ifdef NCCL_TEST_GPU
  free(w);
#else
  NCCLCHECK(ncclMemFree(w));
#endif
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  if (N > 16) return 2;
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, N, id, R));
  const size_t bytes = at(PHASES, 0) * sizeof(int32_t);
  int32_t* w = window_memory(bytes);
  ncclWindow_t win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, w, bytes, &win, NCCL_WIN_DEFAULT));
  memset(w, 0, bytes);
  ring_and_all_pairs(w, win);
  far_ahead(w, win);
  refusals(win);
#ifdef NCCL_TEST_GPU
  /* cudaMalloc's memory, not test_alloc's: managed memory is readable on the host, and a put
   * from it into a host-memory window is a plain copy. */
  void* src = NULL;
  if (cudaMalloc(&src, sizeof(int32_t)) != cudaSuccess) exit(101);
  EXPECT_ERROR(ncclPutSignal(src, 1, ncclInt32, 0, win, 0, 0, 0, 0, comm, NULL), ncclInvalidUsage,
               "is device memory (GPU ");
  cudaFree(src);
#endif
  NCCLCHECK(ncclCommWindowDeregister(comm, win));
  int32_t v = 0;
  EXPECT_ERROR(ncclPutSignal(&v, 1, ncclInt32, 0, win, 0, 0, 0, 0, comm, NULL), ncclInvalidArgument,
               "not a live handle");
  free_window_memory(w);
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
