/* A group is all or nothing, as in NCCL: a call that fails inside ncclGroupStart /
 * ncclGroupEnd returns its error at once, and ncclGroupEnd then returns that error too and runs
 * none of the group's calls (collectives, sends and receives, initialisations). Every rank makes
 * the same bad call, so afterwards the communicator is still in step and usable. */
#include "nccl_test.h"

enum { kCount = 4 };

static void fill(float* in, float* out, int rank) {
  for (int i = 0; i < kCount; ++i) {
    in[i] = (float)(rank + 1 + i);
    out[i] = -1;
  }
}

static void expect_untouched(const float* out, const char* what) {
  for (int i = 0; i < kCount; ++i)
    EXPECT(out[i] == -1, "%s: out[%d] = %g, but the failed group must not run", what, i, out[i]);
}

static void expect_sum(const float* out, int nranks, const char* what) {
  for (int i = 0; i < kCount; ++i) {
    const float want = (float)(nranks * (nranks + 1) / 2 + nranks * i);
    EXPECT(out[i] == want, "%s: out[%d] = %g, expected %g", what, i, out[i], want);
  }
}

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, test_unique_id(), rank));
  float* in = (float*)test_alloc(kCount * sizeof(float));
  float* out = (float*)test_alloc(kCount * sizeof(float));
  float* got = (float*)test_alloc(kCount * sizeof(float));
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;

  /* A bad datatype after a good all_reduce and a ring exchange: nothing runs. */
  fill(in, out, rank);
  fill(in, got, rank);
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, comm, NULL));
  NCCLCHECK(ncclSend(in, kCount, ncclFloat32, next, comm, NULL));
  NCCLCHECK(ncclRecv(got, kCount, ncclFloat32, prev, comm, NULL));
  EXPECT_ERROR(ncclAllReduce(in, out, kCount, (ncclDataType_t)99, ncclSum, comm, NULL),
               ncclInvalidArgument, "ncclAllReduce: datatype 99 is not a valid datatype");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidArgument, "ncclAllReduce in this group failed");
  EXPECT(strstr(ncclGetLastError(NULL), "datatype") != NULL, "the group's error names the cause");
  test_sync();
  expect_untouched(out, "all_reduce of the failed group");
  expect_untouched(got, "recv of the failed group");

  /* Nested: the inner end succeeds, the outermost returns the failure. */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, comm, NULL));
  NCCLCHECK(ncclGroupStart());
  EXPECT_ERROR(ncclSend(NULL, kCount, ncclFloat32, next, comm, NULL), ncclInvalidArgument,
               "sendbuff is NULL");
  NCCLCHECK(ncclGroupEnd());
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidArgument, "ncclSend in this group failed");
  test_sync();
  expect_untouched(out, "all_reduce of the failed nested group");

  /* The communicator is in step: the same group without the bad call runs. */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, comm, NULL));
  NCCLCHECK(ncclSend(in, kCount, ncclFloat32, next, comm, NULL));
  NCCLCHECK(ncclRecv(got, kCount, ncclFloat32, prev, comm, NULL));
  NCCLCHECK(ncclGroupEnd());
  test_sync();
  expect_sum(out, nranks, "all_reduce after the failed groups");
  for (int i = 0; i < kCount; ++i)
    EXPECT(got[i] == (float)(prev + 1 + i), "recv after the failed groups: got[%d] = %g", i,
           got[i]);

  /* An initialisation recorded in a failed group does not run: its handle reports the group's
   * error, it can be destroyed, and the id is still good for a corrected call. */
  ncclUniqueId id2;
  memset(&id2, 0, sizeof id2);
  if (rank == 0) NCCLCHECK(ncclGetUniqueId(&id2));
  char* idBuf = (char*)test_alloc(sizeof id2);
  test_copy(idBuf, &id2, sizeof id2);
  NCCLCHECK(ncclBroadcast(idBuf, idBuf, sizeof id2, ncclChar, 0, comm, NULL));
  test_sync();
  test_copy(&id2, idBuf, sizeof id2);
  ncclComm_t second = NULL;
  fill(in, out, rank);
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclCommInitRank(&second, nranks, id2, rank));
  EXPECT_ERROR(ncclAllReduce(in, out, kCount, ncclFloat32, (ncclRedOp_t)77, comm, NULL),
               ncclInvalidArgument, "op");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidArgument, "ncclAllReduce in this group failed");
  EXPECT(second != NULL, "the recorded initialisation's handle was set");
  EXPECT_ERROR(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, second, NULL),
               ncclInvalidArgument, "none of the group's calls ran");
  NCCLCHECK(ncclCommDestroy(second));
  NCCLCHECK(ncclCommInitRank(&second, nranks, id2, rank));
  NCCLCHECK(ncclAllReduce(in, out, kCount, ncclFloat32, ncclSum, second, NULL));
  test_sync();
  expect_sum(out, nranks, "all_reduce on the communicator initialised again");
  NCCLCHECK(ncclCommDestroy(second));

  test_free(idBuf);
  test_free(got);
  test_free(out);
  test_free(in);
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures ? 1 : 0;
}
