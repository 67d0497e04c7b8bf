/* Every collective and point-to-point call of the NCCL ABI on host memory, verified exactly
 * against values each rank computes for every peer; groups, PreMulSum, split and shrink too.
 * Usage: collectives RANK NRANKS (the ranks meet through NCCL_TEST_ID or NCCL_COMM_ID). */
#include "nccl_test.h"

static int R, N;
static ncclComm_t comm;

static const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                        ncclFloat64, ncclBfloat16};
static const size_t kCounts[] = {0, 1, 7, 1001, 40000};
#define NTYPES (sizeof kTypes / sizeof kTypes[0])
#define NCOUNTS (sizeof kCounts / sizeof kCounts[0])

/* Rank r's input element i for a reduction with op: small integers whose sum, product, max and
 * min every type holds exactly. */
static double input(int r, size_t i, ncclRedOp_t op) {
  if (op == ncclProd) return (double)(1 + (i + (size_t)r) % 2);
  return (double)((i * 7 + (size_t)r * 3) % 11 + (size_t)r);
}

static double reduced(size_t i, ncclRedOp_t op, ncclDataType_t t) {
  double acc = input(0, i, op);
  for (int r = 1; r < N; ++r) {
    double v = input(r, i, op);
    switch (op) {
      case ncclSum:
      case ncclAvg: acc += v; break;
      case ncclProd: acc *= v; break;
      case ncclMax: acc = v > acc ? v : acc; break;
      default: acc = v < acc ? v : acc; break;
    }
  }
  if (op == ncclAvg) acc = is_float(t) ? acc / N : floor(acc / N);
  return acc;
}

static int close_enough(double got, double want, ncclDataType_t t, ncclRedOp_t op) {
  if (op != ncclAvg || !is_float(t)) return got == want;
  double tol = (t == ncclFloat16 || t == ncclBfloat16) ? 1e-2 : 1e-6;
  return fabs(got - want) <= tol * fabs(want) + 1e-12;
}

static void* alloc(size_t count, ncclDataType_t t) { return test_alloc(count * type_size(t)); }

static void test_all_reduce(void) {
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (size_t ti = 0; ti < NTYPES; ++ti) {
    for (size_t oi = 0; oi < 5; ++oi) {
      for (size_t ci = 0; ci < NCOUNTS; ++ci) {
        ncclDataType_t t = kTypes[ti];
        ncclRedOp_t op = ops[oi];
        size_t n = kCounts[ci];
        void* in = alloc(n, t);
        void* out = alloc(n, t);
        for (size_t i = 0; i < n; ++i) store(in, i, t, input(R, i, op));
        int inPlace = ci == 3;
        NCCLCHECK(ncclAllReduce(in, inPlace ? in : out, n, t, op, comm, NULL));
        test_sync();
        const void* res = inPlace ? in : out;
        for (size_t i = 0; i < n; ++i) {
          double got = load(res, i, t), want = reduced(i, op, t);
          if (!close_enough(got, want, t, op)) {
            EXPECT(0, "allreduce type %d op %d count %zu [%zu]: got %g want %g", (int)t, (int)op, n,
                   i, got, want);
            break;
          }
        }
        test_free(in);
        test_free(out);
      }
    }
  }
}

static void test_reduce_and_broadcast(void) {
  const size_t n = 1001;
  const int root = N - 1;
  double* in = alloc(n, ncclFloat64);
  double* out = alloc(n, ncclFloat64);
  for (size_t i = 0; i < n; ++i) in[i] = input(R, i, ncclSum);
  NCCLCHECK(ncclReduce(in, R == root ? out : NULL, n, ncclFloat64, ncclSum, root, comm, NULL));
  test_sync();
  if (R == root)
    for (size_t i = 0; i < n; ++i)
      EXPECT(out[i] == reduced(i, ncclSum, ncclFloat64), "reduce [%zu] %g", i, out[i]);
  int32_t* b = alloc(n, ncclInt32);
  int32_t* c = alloc(n, ncclInt32);
  const int broot = 1 % N;
  for (size_t i = 0; i < n; ++i) b[i] = R == broot ? (int32_t)(i * 3 + 1) : -1;
  NCCLCHECK(ncclBroadcast(b, c, n, ncclInt32, broot, comm, NULL));
  test_sync();
  for (size_t i = 0; i < n; ++i)
    EXPECT(c[i] == (int32_t)(i * 3 + 1), "broadcast [%zu] %d", i, c[i]);
  for (size_t i = 0; i < n; ++i) b[i] = R == 0 ? (int32_t)(i ^ 0x55) : 0;
  NCCLCHECK(ncclBcast(b, n, ncclInt32, 0, comm, NULL));
  test_sync();
  for (size_t i = 0; i < n; ++i) EXPECT(b[i] == (int32_t)(i ^ 0x55), "bcast [%zu] %d", i, b[i]);
  test_free(in);
  test_free(out);
  test_free(b);
  test_free(c);
}

static void test_gathers(void) {
  const size_t n = 333;
  const ncclDataType_t types[] = {ncclInt32, ncclFloat8e4m3, ncclFloat64};
  for (int k = 0; k < 3; ++k) {
    ncclDataType_t t = types[k];
    void* in = alloc(n, t);
    void* all = alloc(n * N, t);
    for (size_t i = 0; i < n; ++i) store(in, i, t, (double)((R * 37 + i) % 100));
    NCCLCHECK(ncclAllGather(in, all, n, t, comm, NULL));
    test_sync();
    for (int r = 0; r < N; ++r)
      for (size_t i = 0; i < n; ++i)
        EXPECT(load(all, r * n + i, t) == (double)((r * 37 + i) % 100), "allgather t%d", (int)t);
    /* In place: this rank's block of the output is its input. */
    memset(all, 0, n * N * type_size(t));
    char* mine = (char*)all + R * n * type_size(t);
    memcpy(mine, in, n * type_size(t));
    NCCLCHECK(ncclAllGather(mine, all, n, t, comm, NULL));
    test_sync();
    for (int r = 0; r < N; ++r)
      EXPECT(load(all, r * n + n - 1, t) == (double)((r * 37 + n - 1) % 100), "allgather in place");
    const int root = N / 2;
    memset(all, 0, n * N * type_size(t));
    NCCLCHECK(ncclGather(in, all, n, t, root, comm, NULL));
    test_sync();
    if (R == root)
      for (int r = 0; r < N; ++r)
        EXPECT(load(all, r * n + 5, t) == (double)((r * 37 + 5) % 100), "gather r%d", r);
    for (size_t i = 0; i < n * N; ++i) store(all, i, t, R == root ? (double)(i % 97) : 0.0);
    NCCLCHECK(ncclScatter(all, in, n, t, root, comm, NULL));
    test_sync();
    for (size_t i = 0; i < n; ++i)
      EXPECT(load(in, i, t) == (double)((R * n + i) % 97), "scatter [%zu]", i);
    test_free(in);
    test_free(all);
  }
}

static void test_reduce_scatter(void) {
  const size_t n = 257;
  float* in = alloc(n * N, ncclFloat32);
  float* out = alloc(n, ncclFloat32);
  for (size_t i = 0; i < n * N; ++i) in[i] = (float)input(R, i, ncclMax);
  NCCLCHECK(ncclReduceScatter(in, out, n, ncclFloat32, ncclMax, comm, NULL));
  test_sync();
  for (size_t i = 0; i < n; ++i)
    EXPECT(out[i] == (float)reduced(R * n + i, ncclMax, ncclFloat32), "reducescatter [%zu]", i);
  /* In place: the output is this rank's block of the input. */
  for (size_t i = 0; i < n * N; ++i) in[i] = (float)input(R, i, ncclSum);
  NCCLCHECK(ncclReduceScatter(in, in + R * n, n, ncclFloat32, ncclSum, comm, NULL));
  test_sync();
  for (size_t i = 0; i < n; ++i)
    EXPECT(in[R * n + i] == (float)reduced(R * n + i, ncclSum, ncclFloat32),
           "reducescatter in place [%zu]", i);
  test_free(in);
  test_free(out);
}

static void test_all_to_all(void) {
  const size_t n = 129;
  int64_t* in = alloc(n * N, ncclInt64);
  int64_t* out = alloc(n * N, ncclInt64);
  for (int p = 0; p < N; ++p)
    for (size_t i = 0; i < n; ++i) in[p * n + i] = R * 1000000 + p * 1000 + (int64_t)i;
  NCCLCHECK(ncclAlltoAll(in, out, n, ncclInt64, comm, NULL));
  test_sync();
  for (int p = 0; p < N; ++p)
    for (size_t i = 0; i < n; ++i)
      EXPECT(out[p * n + i] == p * 1000000 + R * 1000 + (int64_t)i, "alltoall from %d [%zu]", p, i);
  /* All-to-all-v: rank a sends (a + b) % 3 + 1 elements to rank b, blocks packed with a gap. */
  size_t sc[8], sd[8], rc[8], rd[8], soff = 0, roff = 0;
  for (int p = 0; p < N; ++p) {
    sc[p] = (size_t)((R + p) % 3 + 1);
    rc[p] = (size_t)((p + R) % 3 + 1);
    sd[p] = soff;
    rd[p] = roff;
    soff += sc[p] + 1;
    roff += rc[p] + 2;
  }
  for (int p = 0; p < N; ++p)
    for (size_t i = 0; i < sc[p]; ++i) in[sd[p] + i] = R * 100 + p * 10 + (int64_t)i;
  memset(out, 0, n * N * sizeof(int64_t));
  NCCLCHECK(ncclAllToAllv(in, sc, sd, out, rc, rd, ncclInt64, comm, NULL));
  test_sync();
  for (int p = 0; p < N; ++p)
    for (size_t i = 0; i < rc[p]; ++i)
      EXPECT(out[rd[p] + i] == p * 100 + R * 10 + (int64_t)i, "alltoallv from %d [%zu]", p, i);
  test_free(in);
  test_free(out);
}

/* RCCLX's all-to-all-v with counts as data: rank a sends (a + p) % 3 rows of 3 int32 to rank p
 * (sometimes 0), from offsets in reverse peer order; the receiver learns the counts and offsets
 * from the call. */
static void test_all_to_all_v_dynamic(void) {
  const size_t rowElems = 3, maxRows = 3 * (size_t)N;
  int64_t* sendSplits = alloc((size_t)N, ncclInt64);
  int64_t* sendOffsets = alloc((size_t)N, ncclInt64);
  int64_t* recvSplits = alloc((size_t)N, ncclInt64);
  int64_t* recvOffsets = alloc((size_t)N, ncclInt64);
  int32_t* in = alloc(maxRows * rowElems, ncclInt32);
  int32_t* out = alloc(maxRows * rowElems, ncclInt32);
  int64_t row = 0;
  for (int p = N - 1; p >= 0; --p) {
    sendSplits[p] = (R + p) % 3;
    sendOffsets[p] = row;
    for (int64_t k = 0; k < sendSplits[p] * (int64_t)rowElems; ++k)
      in[row * (int64_t)rowElems + k] = R * 1000 + p * 100 + (int32_t)k;
    row += sendSplits[p];
  }
  NCCLCHECK(ncclAllToAllvDynamic(in, maxRows, sendSplits, sendOffsets, out, maxRows, recvSplits,
                                 recvOffsets, rowElems, ncclInt32, comm, NULL));
  test_sync();
  int64_t at = 0;
  for (int p = 0; p < N; ++p) {
    EXPECT(recvSplits[p] == (p + R) % 3, "dynamic: %lld rows from %d", (long long)recvSplits[p], p);
    EXPECT(recvOffsets[p] == at, "dynamic: offset %lld from %d, want %lld",
           (long long)recvOffsets[p], p, (long long)at);
    for (int64_t k = 0; k < recvSplits[p] * (int64_t)rowElems; ++k)
      EXPECT(out[at * (int64_t)rowElems + k] == p * 1000 + R * 100 + (int32_t)k,
             "dynamic: from %d [%lld]", p, (long long)k);
    at += recvSplits[p];
  }
  EXPECT_ERROR(ncclAllToAllvDynamic(in, maxRows, sendSplits, NULL, out, maxRows, recvSplits, NULL,
                                    0, ncclInt32, comm, NULL),
               ncclInvalidArgument, "rowElems");
  /* Known counts: recvSplits is read, so the output (cleared) is rebuilt from it alone. */
  for (size_t i = 0; i < maxRows * rowElems; ++i) out[i] = -1;
  for (int p = 0; p < N; ++p) recvOffsets[p] = -1;
  NCCLCHECK(ncclAllToAllvDynamicKnownCounts(in, maxRows, sendSplits, sendOffsets, out, maxRows,
                                            recvSplits, recvOffsets, rowElems, ncclInt32, comm,
                                            NULL));
  test_sync();
  at = 0;
  for (int p = 0; p < N; ++p) {
    EXPECT(recvOffsets[p] == at, "known counts: offset %lld from %d", (long long)recvOffsets[p], p);
    for (int64_t k = 0; k < recvSplits[p] * (int64_t)rowElems; ++k)
      EXPECT(out[at * (int64_t)rowElems + k] == p * 1000 + R * 100 + (int32_t)k,
             "known counts: from %d [%lld]", p, (long long)k);
    at += recvSplits[p];
  }
#ifndef NCCL_TEST_GPU
  {
    /* On host buffers a wrong expectation is an error naming both numbers, on every rank that
     * expects wrongly (here: every rank expects one row more from its right neighbour). */
    int right = (R + 1) % N;
    recvSplits[right] += 1;
    EXPECT_ERROR(ncclAllToAllvDynamicKnownCounts(in, maxRows, sendSplits, sendOffsets, out, maxRows,
                                                 recvSplits, NULL, rowElems, ncclInt32, comm, NULL),
                 ncclInvalidArgument, "receive counts known");
    recvSplits[right] -= 1;
  }
#endif
  test_free(sendSplits);
  test_free(sendOffsets);
  test_free(recvSplits);
  test_free(recvOffsets);
  test_free(in);
  test_free(out);
}

/* Grouped send/recv around a ring, both directions, and broadcasts of different roots in one
 * group; a PreMulSum operator destroyed before its group ends. */
static void test_groups(void) {
  const size_t n = 4097;
  int32_t *s = alloc(n, ncclInt32), *fromLeft = alloc(n, ncclInt32),
          *fromRight = alloc(n, ncclInt32);
  for (size_t i = 0; i < n; ++i) s[i] = R * 10000 + (int32_t)i;
  int right = (R + 1) % N, left = (R + N - 1) % N;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(s, n, ncclInt32, right, comm, NULL));
  NCCLCHECK(ncclSend(s, n, ncclInt32, left, comm, NULL));
  NCCLCHECK(ncclRecv(fromLeft, n, ncclInt32, left, comm, NULL));
  NCCLCHECK(ncclRecv(fromRight, n, ncclInt32, right, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  for (size_t i = 0; i < n; ++i) {
    EXPECT(fromLeft[i] == left * 10000 + (int32_t)i, "recv from left [%zu] %d", i, fromLeft[i]);
    EXPECT(fromRight[i] == right * 10000 + (int32_t)i, "recv from right [%zu]", i);
    if (g_failures) break;
  }
  int32_t bufs[4][16];
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclGroupStart()); /* groups nest */
  for (int root = 0; root < N && root < 4; ++root) {
    for (int i = 0; i < 16; ++i) bufs[root][i] = R == root ? root * 100 + i : -1;
    NCCLCHECK(ncclBroadcast(bufs[root], bufs[root], 16, ncclInt32, root, comm, NULL));
    test_sync();
  }
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  float pin[64], pout[64];
  for (int i = 0; i < 64; ++i) pin[i] = (float)(R + i);
  ncclRedOp_t premul;
  float scalar = 0.5f * (float)(R + 1);
  NCCLCHECK(ncclRedOpCreatePreMulSum(&premul, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT((int)premul >= (int)ncclNumOps, "premul handle %d", (int)premul);
  NCCLCHECK(ncclAllReduce(pin, pout, 64, ncclFloat32, premul, comm, NULL));
  test_sync();
  NCCLCHECK(ncclRedOpDestroy(premul, comm));
  scalar = 1000.0f; /* read when created: changing it now changes nothing */
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  for (int root = 0; root < N && root < 4; ++root)
    for (int i = 0; i < 16; ++i)
      EXPECT(bufs[root][i] == root * 100 + i, "grouped bcast root %d [%d] %d", root, i,
             bufs[root][i]);
  for (int i = 0; i < 64; ++i) {
    double want = 0;
    for (int r = 0; r < N; ++r) want += 0.5 * (r + 1) * (r + i);
    EXPECT(pout[i] == (float)want, "premulsum [%d] %g want %g", i, pout[i], want);
  }
  EXPECT_ERROR(ncclAllReduce(pin, pout, 64, ncclFloat32, premul, comm, NULL), ncclInvalidArgument,
               "PreMulSum");
  test_free(s);
  test_free(fromLeft);
  test_free(fromRight);
}

static void check_comm(ncclComm_t c, int wantRank, int wantSize, const char* what) {
  int rank = -1, size = -1, dev = -2;
  NCCLCHECK(ncclCommUserRank(c, &rank));
  NCCLCHECK(ncclCommCount(c, &size));
  NCCLCHECK(ncclCommCuDevice(c, &dev));
  EXPECT(rank == wantRank && size == wantSize, "%s: rank %d of %d, want %d of %d", what, rank, size,
         wantRank, wantSize);
  /* An allreduce of the members' original ranks shows who is in it. */
  int32_t x = R, sum = -1;
  NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, c, NULL));
  test_sync();
  (void)sum;
}

static void test_split_and_shrink(void) {
  ncclComm_t sub = NULL;
  /* Inside a group a split runs at once (as torch calls it). */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclCommSplit(comm, 0, R, &sub, NULL));
  NCCLCHECK(ncclGroupEnd());
  EXPECT(sub != NULL, "split in a group gave NULL");
  if (sub) {
    check_comm(sub, R, N, "split in a group");
    NCCLCHECK(ncclCommDestroy(sub));
  }
  /* Odd and even ranks, in reverse order of rank. */
  NCCLCHECK(ncclCommSplit(comm, R % 2, -R, &sub, NULL));
  int members = (N - R % 2 + 1) / 2, pos = 0;
  for (int r = N - 1; r > R; --r) pos += r % 2 == R % 2;
  EXPECT(sub != NULL, "split gave NULL");
  if (sub) {
    check_comm(sub, pos, members, "split");
    int32_t x = R, sum = 0, want = 0;
    NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, sub, NULL));
    test_sync();
    for (int r = R % 2; r < N; r += 2) want += r;
    EXPECT(sum == want, "split allreduce %d want %d", sum, want);
    NCCLCHECK(ncclCommDestroy(sub));
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "split-nocolor";
  NCCLCHECK(ncclCommSplit(comm, R == 0 ? NCCL_SPLIT_NOCOLOR : 7, R, &sub, &cfg));
  EXPECT((R == 0) == (sub == NULL), "NOCOLOR: rank %d got %p", R, (void*)sub);
  if (sub) {
    check_comm(sub, R - 1, N - 1, "split nocolor");
    NCCLCHECK(ncclCommDestroy(sub));
  }
  /* Shrink without the last rank, which takes no part (as a failed rank would not). */
  int excluded = N - 1;
  if (R != excluded) {
    NCCLCHECK(ncclCommShrink(comm, &excluded, 1, &sub, NULL, NCCL_SHRINK_DEFAULT));
    EXPECT(sub != NULL, "shrink gave NULL");
    if (sub) {
      check_comm(sub, R, N - 1, "shrink");
      int32_t x = R + 1, sum = 0;
      NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, sub, NULL));
      test_sync();
      EXPECT(sum == (N - 1) * N / 2, "shrink allreduce %d", sum);
      NCCLCHECK(ncclCommDestroy(sub));
    }
  }
  /* Every rank calls it again, the excluded one gets NULL at once. */
  NCCLCHECK(ncclCommShrink(comm, &excluded, 1, &sub, NULL, NCCL_SHRINK_DEFAULT));
  EXPECT((R == excluded) == (sub == NULL), "shrink excluded rank %d got %p", R, (void*)sub);
  if (sub) NCCLCHECK(ncclCommDestroy(sub));
}

/* ncclMemAlloc's memory as a window (a symmetric buffer on the GPU, nothing on the host) and a
 * local registration; ncclGroupSimulateEnd; empty calls with NULL buffers. */
static void test_memory_and_windows(void) {
  const size_t n = 2048, bytes = n * sizeof(float);
  float *p = NULL, host[2048];
  NCCLCHECK(ncclMemAlloc((void**)&p, bytes));
  EXPECT(p != NULL && (uintptr_t)p % NCCL_WIN_REQUIRED_ALIGNMENT == 0, "ncclMemAlloc gave %p",
         (void*)p);
  ncclWindow_t win = NULL;
  NCCLCHECK(ncclCommWindowRegister(comm, p, bytes, &win, NCCL_WIN_COLL_SYMMETRIC));
  for (size_t i = 0; i < n; ++i) host[i] = (float)(R + 1) * (float)(i % 13);
  test_copy(p, host, bytes);
  NCCLCHECK(ncclAllReduce(p, p, n, ncclFloat32, ncclSum, comm, NULL));
  test_sync();
  test_copy(host, p, bytes);
  for (size_t i = 0; i < n; ++i) {
    float want = (float)(N * (N + 1) / 2) * (float)(i % 13);
    if (host[i] != want) {
      EXPECT(0, "allreduce in a window [%zu]: %g want %g", i, host[i], want);
      break;
    }
  }
  void* user = NULL;
  NCCLCHECK(ncclWinGetUserPtr(comm, win, &user));
  EXPECT(user == (void*)p, "ncclWinGetUserPtr gave %p for %p", user, (void*)p);
  NCCLCHECK(ncclCommWindowDeregister(comm, win));
  EXPECT_ERROR(ncclWinGetUserPtr(comm, win, &user), ncclInvalidArgument, "not a live handle");
  void* handle = NULL;
  NCCLCHECK(ncclCommRegister(comm, p, bytes, &handle));
  NCCLCHECK(ncclCommDeregister(comm, handle));
  int junk[4] = {0};
  EXPECT_ERROR(ncclCommDeregister(comm, junk), ncclInvalidArgument,
               "not a live handle of ncclCommRegister");
  NCCLCHECK(ncclMemFree(p));
  EXPECT_ERROR(ncclMemFree(junk), ncclInvalidArgument, "not allocated by ncclMemAlloc");
  /* A simulated group still runs its calls here; it reports their host time. */
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  int32_t x = R, sum = -1;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  NCCLCHECK(ncclGroupSimulateEnd(&sim));
  EXPECT(sim.estimatedTime >= 0 && sum == N * (N - 1) / 2, "simulated group: %g us, sum %d",
         sim.estimatedTime, sum);
  NCCLCHECK(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, NULL));
  NCCLCHECK(ncclAllGather(NULL, NULL, 0, ncclInt8, comm, NULL));
#ifdef NCCL_TEST_GPU
  /* As torch passes empty tensors: NULL buffers of no elements, on a stream. */
  cudaStream_t s;
  cudaStreamCreate(&s);
  NCCLCHECK(ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, s));
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(NULL, 0, ncclFloat32, (R + 1) % N, comm, s));
  NCCLCHECK(ncclRecv(NULL, 0, ncclFloat32, (R + N - 1) % N, comm, s));
  NCCLCHECK(ncclGroupEnd());
  EXPECT(cudaStreamSynchronize(s) == cudaSuccess, "empty calls on a stream");
  cudaStreamDestroy(s);
#endif
}

/* Bad arguments: each fails on this rank alone, before any step that involves peers. */
static void test_errors(void) {
  float x[4] = {0};
  EXPECT_ERROR(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, NULL, NULL), ncclInvalidArgument,
               "comm is NULL");
  EXPECT_ERROR(ncclAllReduce(x, x, 4, (ncclDataType_t)12, ncclSum, comm, NULL), ncclInvalidArgument,
               "datatype 12");
  EXPECT_ERROR(ncclAllReduce(x, x, 4, ncclFloat32, (ncclRedOp_t)99, comm, NULL),
               ncclInvalidArgument, "op 99");
  EXPECT_ERROR(ncclBroadcast(x, x, 4, ncclFloat32, N + 3, comm, NULL), ncclInvalidArgument, "root");
  EXPECT_ERROR(ncclSend(x, 4, ncclFloat32, N, comm, NULL), ncclInvalidArgument, "peer");
  EXPECT_ERROR(ncclAllReduce(NULL, x, 4, ncclFloat32, ncclSum, comm, NULL), ncclInvalidArgument,
               "sendbuf");
  EXPECT_ERROR(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, (cudaStream_t)0x1234),
               ncclInvalidArgument, "stream");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd");
  EXPECT_ERROR(ncclRedOpDestroy(ncclSum, comm), ncclInvalidArgument, "built-in");
  EXPECT_ERROR(ncclDevCommCreate(comm, NULL, NULL), ncclInvalidArgument, "reqs is NULL");
  EXPECT_ERROR(ncclCommCount(comm, NULL), ncclInvalidArgument, "count is NULL");
  EXPECT_ERROR(ncclCommRevoke(comm, 3), ncclInvalidArgument, "revokeFlags 3");
  int bogus[4] = {0};
  EXPECT_ERROR(ncclCommCount((ncclComm_t)bogus, &bogus[0]), ncclInvalidArgument,
               "not a communicator");
  ncclComm_t other = NULL;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  EXPECT_ERROR(ncclCommInitRank(&other, 2, id, 5), ncclInvalidArgument, "rank 5");
  EXPECT(other == NULL, "failed init left a handle");
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.magic = 0x1234;
  EXPECT_ERROR(ncclCommInitRankConfig(&other, 1, id, 0, &cfg), ncclInvalidArgument,
               "config->magic");
  ncclResult_t async = ncclInternalError;
  NCCLCHECK(ncclCommGetAsyncError(comm, &async));
  EXPECT(async == ncclSuccess, "async error %d after argument errors", (int)async);
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, N, id, R));
  check_comm(comm, R, N, "world");
  test_all_reduce();
  test_reduce_and_broadcast();
  test_gathers();
  test_reduce_scatter();
  test_all_to_all();
  test_all_to_all_v_dynamic();
  test_groups();
  test_split_and_shrink();
  test_memory_and_windows();
  test_errors();
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  float x = 1;
  EXPECT_ERROR(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclSum, comm, NULL), ncclInvalidUsage,
               "destroyed");
  EXPECT_ERROR(ncclCommDestroy(comm), ncclInvalidUsage, "destroyed");
  EXPECT_ERROR(ncclCommGetAsyncError(comm, (ncclResult_t*)&x), ncclInvalidUsage, "destroyed");
  printf("rank %d: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
