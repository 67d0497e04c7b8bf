/* ncclCommGetUniqueId and ncclCommGrow: ranks 0..OLD-1 (argv[3]) make a communicator, rank 0
 * asks for a grow id and writes it (hex) to the file NCCL_TEST_GROW_FILE names; the old ranks
 * grow to NRANKS passing the id on rank 0 only, the new ranks join through the file's id. Then
 * an all_reduce on the grown communicator, the old one still usable, and the refusals. */
#define _POSIX_C_SOURCE 200809L
#include "grow_id_file.h"
#include "nccl_test.h"

static void all_reduce_check(ncclComm_t comm, int rank, int nranks, const char* what) {
  int32_t* buf = (int32_t*)test_alloc(4 * sizeof(int32_t));
  for (int i = 0; i < 4; ++i) buf[i] = rank + 1 + i;
  NCCLCHECK(ncclAllReduce(buf, buf, 4, ncclInt32, ncclSum, comm, 0));
  test_sync();
  for (int i = 0; i < 4; ++i) {
    const int32_t want = nranks * (nranks + 1) / 2 + nranks * i;
    EXPECT(buf[i] == want, "%s: element %d is %d, expected %d", what, i, buf[i], want);
  }
  test_free(buf);
}

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  const int old = argc > 3 ? atoi(argv[3]) : nranks - 1;
  ncclComm_t comm = NULL, grown = NULL;
  ncclUniqueId gid;
  if (rank < old) {
    NCCLCHECK(ncclCommInitRank(&comm, old, test_unique_id(), rank));
    all_reduce_check(comm, rank, old, "before the grow");
    EXPECT_ERROR(ncclCommGrow(comm, old, NULL, -1, &grown, NULL), ncclInvalidArgument,
                 "must be larger than comm's");
    EXPECT_ERROR(ncclCommGrow(comm, nranks, NULL, 0, &grown, NULL), ncclInvalidArgument,
                 "must be -1 on a rank of comm");
    if (rank == 0) {
      EXPECT_ERROR(ncclCommGetUniqueId(comm, NULL), ncclInvalidArgument, "uniqueId is NULL");
      NCCLCHECK(ncclCommGetUniqueId(comm, &gid));
      ncclUniqueId again;
      EXPECT_ERROR(ncclCommGetUniqueId(comm, &again), ncclInvalidUsage, "not been consumed");
      write_id(&gid);
    }
    NCCLCHECK(ncclCommGrow(comm, nranks, rank == 0 ? &gid : NULL, -1, &grown, NULL));
    if (rank == 0) {
      NCCLCHECK(ncclCommGetUniqueId(comm, &gid)); /* the first was consumed */
    }
  } else {
    EXPECT_ERROR(ncclCommGrow(NULL, nranks, NULL, rank, &grown, NULL), ncclInvalidArgument,
                 "uniqueId is NULL");
    gid = read_id();
    EXPECT_ERROR(ncclCommGrow(NULL, nranks, &gid, nranks, &grown, NULL), ncclInvalidArgument,
                 "out of range");
    NCCLCHECK(ncclCommGrow(NULL, nranks, &gid, rank, &grown, NULL));
  }
  int count = 0, me = -1;
  NCCLCHECK(ncclCommCount(grown, &count));
  NCCLCHECK(ncclCommUserRank(grown, &me));
  EXPECT(count == nranks && me == rank, "grown: rank %d of %d, expected %d of %d", me, count, rank,
         nranks);
  all_reduce_check(grown, rank, nranks, "after the grow");
  if (comm != NULL) {
    all_reduce_check(comm, rank, old, "the old communicator after the grow");
    NCCLCHECK(ncclCommDestroy(comm));
  }
  NCCLCHECK(ncclCommDestroy(grown));
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures;
}
