/* ncclCommShrink with exclude lists that differ between ranks (3 ranks): rank 0 excludes rank 2,
 * ranks 1 and 2 exclude rank 1. No communicator may come of it: rank 0 and rank 2, the ranks
 * that would take part, both fail with ncclInvalidArgument naming the two lists (rank 2 would
 * otherwise have taken rank 1's place in rank 0's new communicator); rank 1, excluded by its own
 * list, gets NULL. The parent communicator stays usable. */
#include "nccl_test.h"

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  ncclComm_t comm = NULL, sub = (ncclComm_t)0x1;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, test_unique_id(), rank));
  int excluded = rank == 0 ? 2 : 1;
  const ncclResult_t r = ncclCommShrink(comm, &excluded, 1, &sub, NULL, NCCL_SHRINK_DEFAULT);
  if (rank == 1) {
    EXPECT(r == ncclSuccess && sub == NULL, "excluded rank: shrink returned %d, newcomm %p", (int)r,
           (void*)sub);
  } else {
    const char* e = ncclGetLastError(NULL);
    EXPECT(r == ncclInvalidArgument, "shrink returned %d, expected ncclInvalidArgument (%s)",
           (int)r, e);
    EXPECT(strstr(e, "passed [0,1]") != NULL && strstr(e, "passed [0,2]") != NULL,
           "last error '%s' does not name both lists", e);
    EXPECT(sub == NULL, "a failed shrink left newcomm %p", (void*)sub);
  }
  /* The parent still works on every rank. */
  int32_t x = rank + 1, sum = 0;
  NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  EXPECT(sum == nranks * (nranks + 1) / 2, "all_reduce after the failed shrink: %d", sum);
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures ? 1 : 0;
}
