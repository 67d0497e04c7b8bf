/* Ways of making communicators: non-blocking initialisation polled through
 * ncclCommGetAsyncError, several ranks initialised by one thread inside a group, ncclCommInitAll,
 * and ncclCommAbort from a watchdog thread while another thread polls async errors.
 * Usage: init_modes RANK NRANKS MODE, MODE one of
 *   nonblocking  every rank a process; blocking = 0
 *   group        one process (RANK 0) initialising NRANKS ranks in one group
 *   initall      one process: ncclCommInitAll of NRANKS
 *   initall_missing_gpu  one process: ncclCommInitAll over one GPU more than it sees fails at
 *                once with ncclInvalidArgument naming the device (GPU builds of the program)
 *   two_per_process  NRANKS / 2 processes, process RANK driving ranks 2 RANK and 2 RANK + 1
 *   abort        every rank a process; a second thread aborts the communicator
 *   dead_peer    2 processes; rank 1 exits after initialising, rank 0's allreduce fails (set
 *                RCCLX_TIMEOUT_MS low), its watchdog thread sees the error and aborts
 *   dead_peer_group  the same with the allreduce in a group (the error comes at its end)
 *   dead_peer_loop  NRANKS processes; the last exits while the others loop on allreduce: every
 *                survivor's call fails, and its watchdog sees the error, long before
 *                RCCLX_TIMEOUT_MS (set it high), naming the dead rank */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "nccl_test.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Buffers on communicator c's GPU (test_alloc allocates on the current one). */
static int32_t* alloc_for(ncclComm_t c, size_t count) {
#ifdef NCCL_TEST_GPU
  int dev = 0;
  NCCLCHECK(ncclCommCuDevice(c, &dev));
  cudaSetDevice(dev);
#else
  (void)c;
#endif
  return (int32_t*)test_alloc(count * sizeof(int32_t));
}

/* A grouped allreduce over `n` communicators of one clique driven by this thread. */
static void grouped_all_reduce(ncclComm_t* comms, int n) {
  int32_t* in[8];
  int32_t* out[8];
  NCCLCHECK(ncclGroupStart());
  for (int c = 0; c < n; ++c) {
    in[c] = alloc_for(comms[c], 33);
    out[c] = alloc_for(comms[c], 33);
    for (int i = 0; i < 33; ++i) in[c][i] = c * 10 + i;
    NCCLCHECK(ncclAllReduce(in[c], out[c], 33, ncclInt32, ncclSum, comms[c], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  for (int c = 0; c < n; ++c) {
    for (int i = 0; i < 33; ++i)
      EXPECT(out[c][i] == 10 * n * (n - 1) / 2 + n * i, "comm %d [%d] = %d", c, i, out[c][i]);
    test_free(in[c]);
    test_free(out[c]);
  }
}

static void mode_nonblocking(int rank, int nranks) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "nonblocking";
  ncclComm_t comm = NULL;
  ncclUniqueId id = test_unique_id();
  /* Rank 0 starts late, so the others are certainly still initialising when they poll. */
  if (rank == 0) {
    struct timespec pause = {0, 300 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, id, rank, &cfg);
  EXPECT(r == ncclInProgress || r == ncclSuccess, "init returned %d", (int)r);
  EXPECT(comm != NULL, "no handle before the initialisation finished");
  ncclResult_t state = ncclInProgress;
  int polls = 0, inProgress = 0;
  double slowest = 0;
  while (state == ncclInProgress) {
    double t0 = now_ms();
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
    double dt = now_ms() - t0;
    slowest = dt > slowest ? dt : slowest;
    inProgress += state == ncclInProgress;
    ++polls;
  }
  EXPECT(state == ncclSuccess, "initialisation ended with %d", (int)state);
  EXPECT(slowest < 50, "ncclCommGetAsyncError took %.1f ms (it must not block)", slowest);
  if (rank != 0) EXPECT(inProgress > 0, "never saw ncclInProgress (%d polls)", polls);
  int32_t x = rank + 1, sum = 0;
  NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  EXPECT(sum == nranks * (nranks + 1) / 2, "sum %d", sum);
  NCCLCHECK(ncclCommDestroy(comm));
}

/* Splits in a group, as a thread driving one rank per GPU makes them: each waits for the
 * others, so they run together at ncclGroupEnd. The last rank stays out (NCCL_SPLIT_NOCOLOR);
 * the others form one communicator in reverse order (key). Then shrinks in a group likewise. */
static void split_and_shrink_in_groups(ncclComm_t* comms, int nranks) {
  ncclComm_t subs[8] = {0};
  NCCLCHECK(ncclGroupStart());
  for (int r = 0; r < nranks; ++r) {
    test_select_gpu(r);
    const int color = r == nranks - 1 ? NCCL_SPLIT_NOCOLOR : 7;
    NCCLCHECK(ncclCommSplit(comms[r], color, nranks - r, &subs[r], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  EXPECT(subs[nranks - 1] == NULL, "the rank split with NCCL_SPLIT_NOCOLOR got a communicator");
  ncclComm_t kept[8];
  for (int r = 0; r < nranks - 1; ++r) {
    int rank = -1, count = 0;
    NCCLCHECK(ncclCommUserRank(subs[r], &rank));
    NCCLCHECK(ncclCommCount(subs[r], &count));
    EXPECT(count == nranks - 1 && rank == nranks - 2 - r, "split of rank %d: rank %d of %d", r,
           rank, count);
    kept[rank] = subs[r];
  }
  grouped_all_reduce(kept, nranks - 1);
  for (int r = 0; r < nranks - 1; ++r) NCCLCHECK(ncclCommDestroy(subs[r]));
  /* Shrinks in a group likewise; the excluded rank's call gives NULL. */
  ncclComm_t shrunk[8] = {0};
  int excluded = nranks - 1;
  NCCLCHECK(ncclGroupStart());
  for (int r = 0; r < nranks; ++r) {
    test_select_gpu(r);
    NCCLCHECK(ncclCommShrink(comms[r], &excluded, 1, &shrunk[r], NULL, NCCL_SHRINK_DEFAULT));
  }
  NCCLCHECK(ncclGroupEnd());
  EXPECT(shrunk[excluded] == NULL, "the excluded rank got a communicator");
  for (int r = 0; r < nranks - 1; ++r) {
    int rank = -1, count = 0;
    NCCLCHECK(ncclCommUserRank(shrunk[r], &rank));
    NCCLCHECK(ncclCommCount(shrunk[r], &count));
    EXPECT(count == nranks - 1 && rank == r, "shrink of rank %d: rank %d of %d", r, rank, count);
  }
  grouped_all_reduce(shrunk, nranks - 1);
  for (int r = 0; r < nranks - 1; ++r) NCCLCHECK(ncclCommDestroy(shrunk[r]));
}

static void mode_group(int nranks) {
  ncclComm_t comms[8] = {0};
  ncclUniqueId id;
  NCCLCHECK(ncclGetUniqueId(&id));
  NCCLCHECK(ncclGroupStart());
  for (int r = 0; r < nranks; ++r) {
    test_select_gpu(r); /* rank r on GPU r % (number of GPUs) */
    NCCLCHECK(ncclCommInitRank(&comms[r], nranks, id, r));
  }
  /* Recorded, not run: using one before the group ends is refused, and like any failed call
   * of a group that fails the group. Nothing was initialised; the id is still good. */
  int count = 0;
  EXPECT_ERROR(ncclAllReduce(&count, &count, 1, ncclInt32, ncclSum, comms[0], NULL),
               ncclInvalidUsage, "open group");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidUsage, "none of the group's calls ran");
  for (int r = 0; r < nranks; ++r) NCCLCHECK(ncclCommDestroy(comms[r]));
  NCCLCHECK(ncclGroupStart());
  for (int r = 0; r < nranks; ++r) {
    test_select_gpu(r);
    NCCLCHECK(ncclCommInitRank(&comms[r], nranks, id, r));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int r = 0; r < nranks; ++r) {
    int rank = -1;
    NCCLCHECK(ncclCommUserRank(comms[r], &rank));
    EXPECT(rank == r, "comm %d has rank %d", r, rank);
  }
  grouped_all_reduce(comms, nranks);
  if (nranks >= 2) split_and_shrink_in_groups(comms, nranks);
  for (int r = 0; r < nranks; ++r) NCCLCHECK(ncclCommDestroy(comms[r]));
}

/* nccl-tests' "-g 2" over processes: process p drives ranks 2p and 2p+1 of NRANKS, initialised in
 * one group; grouped collectives over both; then destroyed one after the other. */
static void mode_two_per_process(int process, int nranks) {
  ncclComm_t comms[2] = {0};
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    /* The device current at each ncclCommInitRank is that rank's, as nccl-tests sets it. */
    test_select_gpu(2 * process + i);
    NCCLCHECK(ncclCommInitRank(&comms[i], nranks, id, 2 * process + i));
  }
  NCCLCHECK(ncclGroupEnd());
  int32_t* in[2];
  int32_t* out[2];
  NCCLCHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    in[i] = alloc_for(comms[i], 65);
    out[i] = alloc_for(comms[i], 65 * (size_t)nranks);
    for (int k = 0; k < 65; ++k) in[i][k] = (2 * process + i) * 100 + k;
    NCCLCHECK(ncclAllGather(in[i], out[i], 65, ncclInt32, comms[i], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  for (int i = 0; i < 2; ++i) {
    for (int r = 0; r < nranks; ++r)
      EXPECT(out[i][r * 65 + 64] == r * 100 + 64, "comm %d block %d: %d", i, r,
             out[i][r * 65 + 64]);
    test_free(in[i]);
    test_free(out[i]);
  }
  for (int i = 0; i < 2; ++i) NCCLCHECK(ncclCommDestroy(comms[i]));
}

static void mode_initall(int nranks) {
  ncclComm_t comms[8] = {0};
  NCCLCHECK(ncclCommInitAll(comms, nranks, NULL));
  for (int r = 0; r < nranks; ++r) {
    int rank = -1, size = -1;
    NCCLCHECK(ncclCommUserRank(comms[r], &rank));
    NCCLCHECK(ncclCommCount(comms[r], &size));
    EXPECT(rank == r && size == nranks, "comm %d: rank %d of %d", r, rank, size);
  }
  grouped_all_reduce(comms, nranks);
  /* Grouped point to point between communicators of one thread: a ring. */
  int32_t send[8], recv[8];
  NCCLCHECK(ncclGroupStart());
  for (int r = 0; r < nranks; ++r) {
    send[r] = 100 + r;
    recv[r] = -1;
    NCCLCHECK(ncclSend(&send[r], 1, ncclInt32, (r + 1) % nranks, comms[r], NULL));
    NCCLCHECK(ncclRecv(&recv[r], 1, ncclInt32, (r + nranks - 1) % nranks, comms[r], NULL));
  }
  NCCLCHECK(ncclGroupEnd());
  for (int r = 0; r < nranks; ++r)
    EXPECT(recv[r] == 100 + (r + nranks - 1) % nranks, "ring recv %d: %d", r, recv[r]);
  for (int r = 0; r < nranks; ++r) NCCLCHECK(ncclCommDestroy(comms[r]));
}

static void mode_initall_missing_gpu(void) {
#ifdef NCCL_TEST_GPU
  int ngpu = 0;
  EXPECT(cudaGetDeviceCount(&ngpu) == cudaSuccess && ngpu >= 1 && ngpu < 8, "%d GPUs", ngpu);
  ncclComm_t comms[9] = {0};
  const double start = now_ms();
  const ncclResult_t res = ncclCommInitAll(comms, ngpu + 1, NULL);
  const double took = now_ms() - start;
  EXPECT(res == ncclInvalidArgument, "ncclCommInitAll of %d ranks on %d GPUs returned %d", ngpu + 1,
         ngpu, (int)res);
  EXPECT(took < 2000.0, "ncclCommInitAll took %.0f ms to fail", took);
  const char* why = ncclGetLastError(NULL);
  EXPECT(strstr(why, "device") != NULL && strstr(why, "sees") != NULL, "last error: %s", why);
  for (int r = 0; r <= ngpu; ++r) EXPECT(comms[r] == NULL, "comms[%d] was set", r);
#endif
}

struct Watchdog {
  ncclComm_t comm;
  volatile int stop;
  volatile int polls;
  volatile int loopDone; /* past the collectives: a peer's abort may show from now on */
  ncclResult_t abortResult;
};

static void* watchdog(void* arg) {
  struct Watchdog* w = (struct Watchdog*)arg;
  while (!w->stop) {
    ncclResult_t state = ncclInternalError;
    NCCLCHECK(ncclCommGetAsyncError(w->comm, &state));
    EXPECT(state == ncclSuccess || (w->loopDone && state == ncclRemoteError),
           "async error %d while healthy", (int)state);
    ++w->polls;
  }
  w->abortResult = ncclCommAbort(w->comm);
  return NULL;
}

static void mode_abort(int rank, int nranks) {
  ncclComm_t comm = NULL;
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  struct Watchdog w = {comm, 0, 0, 0, ncclInternalError};
  pthread_t t;
  pthread_create(&t, NULL, watchdog, &w);
  /* The watchdog is polling before the collectives start, and keeps polling while they run. */
  while (w.polls == 0) sched_yield();
  for (int k = 0; k < 200; ++k) {
    float x[256], y[256];
    for (int i = 0; i < 256; ++i) x[i] = (float)(rank + i);
    NCCLCHECK(ncclAllReduce(x, y, 256, ncclFloat32, ncclSum, comm, NULL));
    EXPECT(y[255] == (float)(nranks * 255 + nranks * (nranks - 1) / 2), "iteration %d: %g", k,
           y[255]);
  }
  /* Every rank is past its loop before any aborts (an abort fails the peers' communicator, and
   * their watchdogs then see it): flag, then meet. */
  w.loopDone = 1;
  float one = 1, sum = 0;
  NCCLCHECK(ncclAllReduce(&one, &sum, 1, ncclFloat32, ncclSum, comm, NULL));
  w.stop = 1;
  pthread_join(t, NULL);
  EXPECT(w.polls > 0, "the watchdog never polled");
  EXPECT(w.abortResult == ncclSuccess, "ncclCommAbort from the watchdog returned %d (%s)",
         (int)w.abortResult, ncclGetLastError(NULL));
  float x = 1;
  EXPECT_ERROR(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage,
               "aborted");
  EXPECT_ERROR(ncclCommAbort(comm), ncclInvalidUsage, "aborted");
}

/* Polls ncclCommGetAsyncError until it reports an error, then keeps that error and its message
 * and, if asked, aborts the communicator (a torch-style watchdog). */
struct ErrorWatchdog {
  ncclComm_t comm;
  int abortAfter;
  ncclResult_t seen;
  ncclResult_t abortResult;
  char message[512];
};

static void* error_watchdog(void* arg) {
  struct ErrorWatchdog* w = (struct ErrorWatchdog*)arg;
  ncclResult_t state = ncclSuccess;
  while (state == ncclSuccess) {
    NCCLCHECK(ncclCommGetAsyncError(w->comm, &state));
    struct timespec pause = {0, 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  w->seen = state;
  snprintf(w->message, sizeof(w->message), "%s", ncclGetLastError(w->comm));
  if (w->abortAfter) w->abortResult = ncclCommAbort(w->comm);
  return NULL;
}

static void mode_dead_peer(int rank, int nranks, int grouped) {
  ncclComm_t comm = NULL;
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  if (rank != 0) return; /* exits without ever joining rank 0's allreduce */
  struct ErrorWatchdog w = {comm, 1, ncclSuccess, ncclInternalError, ""};
  pthread_t t;
  pthread_create(&t, NULL, error_watchdog, &w);
  float x[1024] = {0}, y[1024];
  ncclResult_t r;
  if (grouped) { /* recorded, then fails at the group's end */
    NCCLCHECK(ncclGroupStart());
    NCCLCHECK(ncclAllReduce(x, y, 1024, ncclFloat32, ncclSum, comm, NULL));
    r = ncclGroupEnd();
  } else {
    r = ncclAllReduce(x, y, 1024, ncclFloat32, ncclSum, comm, NULL);
  }
  EXPECT(r == ncclRemoteError || r == ncclSystemError, "allreduce with a dead peer returned %d",
         (int)r);
  pthread_join(t, NULL);
  EXPECT(w.seen == r, "the watchdog saw async error %d, the call returned %d", (int)w.seen, (int)r);
  EXPECT(w.abortResult == ncclSuccess, "abort returned %d", (int)w.abortResult);
}

static void mode_dead_peer_loop(int rank, int nranks) {
  ncclComm_t comm = NULL;
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  const int victim = nranks - 1;
  enum { kCount = 1 << 18 };
  int32_t* x = alloc_for(comm, kCount);
  int32_t* y = alloc_for(comm, kCount);
  NCCLCHECK(ncclAllReduce(x, y, kCount, ncclInt32, ncclMax, comm, NULL));
  test_sync();
  if (rank == victim) {
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    _Exit(0); /* mid-loop for the others, without destroying anything */
  }
  struct ErrorWatchdog w = {comm, 0, ncclSuccess, ncclSuccess, ""};
  pthread_t t;
  pthread_create(&t, NULL, error_watchdog, &w);
  const double start = now_ms();
  ncclResult_t r = ncclSuccess;
  while (r == ncclSuccess && now_ms() - start < 60000) {
    r = ncclAllReduce(x, y, kCount, ncclInt32, ncclMax, comm, NULL);
    test_sync();
  }
  const double elapsed = now_ms() - start;
  char callMessage[512];
  snprintf(callMessage, sizeof(callMessage), "%s", ncclGetLastError(comm));
  pthread_join(t, NULL);
  char victimName[32];
  snprintf(victimName, sizeof(victimName), "rank %d", victim);
  EXPECT(r == ncclRemoteError, "allreduce with a dead peer returned %d (%s)", (int)r, callMessage);
  EXPECT(strstr(callMessage, victimName) != NULL, "the call's error does not name %s: %s",
         victimName, callMessage);
  EXPECT(w.seen == ncclRemoteError, "the watchdog saw async error %d", (int)w.seen);
  EXPECT(strstr(w.message, victimName) != NULL, "the watchdog's error does not name %s: %s",
         victimName, w.message);
  printf("rank %d raised after %.0f ms: %s\n", rank, elapsed, callMessage);
  NCCLCHECK(ncclCommAbort(comm));
}

int main(int argc, char** argv) {
  int rank, nranks;
  test_init_args(argc, argv, &rank, &nranks);
  const char* mode = argc > 3 ? argv[3] : "";
  if (strcmp(mode, "nonblocking") == 0)
    mode_nonblocking(rank, nranks);
  else if (strcmp(mode, "group") == 0)
    mode_group(nranks);
  else if (strcmp(mode, "initall") == 0)
    mode_initall(nranks);
  else if (strcmp(mode, "initall_missing_gpu") == 0)
    mode_initall_missing_gpu();
  else if (strcmp(mode, "two_per_process") == 0)
    mode_two_per_process(rank, nranks);
  else if (strcmp(mode, "abort") == 0)
    mode_abort(rank, nranks);
  else if (strcmp(mode, "dead_peer") == 0)
    mode_dead_peer(rank, nranks, 0);
  else if (strcmp(mode, "dead_peer_group") == 0)
    mode_dead_peer(rank, nranks, 1);
  else if (strcmp(mode, "dead_peer_loop") == 0)
    mode_dead_peer_loop(rank, nranks);
  else {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  printf("rank %d %s: %s (%d failures)\n", rank, mode, g_failures ? "FAILED" : "passed",
         g_failures);
  return g_failures ? 1 : 0;
}
