/* A grow that fails leaves the communicator able to grow again: ranks 0 and 1 make a
 * communicator and grow it to 3 while the new rank is not there yet (the grow times out);
 * rank 0's id is spent by that attempt (passing it again is ncclInvalidArgument), rank 0 asks
 * for a new id, writes it to the file NCCL_TEST_GROW_FILE names, and the second grow, which the
 * new rank 2 joins through that file, succeeds. */
#define _POSIX_C_SOURCE 200809L
#include "grow_id_file.h"
#include "nccl_test.h"

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  const int old = nranks - 1;
  ncclComm_t comm = NULL, grown = NULL;
  ncclUniqueId gid;
  if (rank < old) {
    NCCLCHECK(ncclCommInitRank(&comm, old, test_unique_id(), rank));
    if (rank == 0) NCCLCHECK(ncclCommGetUniqueId(comm, &gid));
    const ncclResult_t r = ncclCommGrow(comm, nranks, rank == 0 ? &gid : NULL, -1, &grown, NULL);
    EXPECT(r != ncclSuccess && grown == NULL, "a grow no new rank joined returned %d", (int)r);
    if (rank == 0) {
      /* Only rank 0 calls: the check fails before any collective step. */
      EXPECT_ERROR(ncclCommGrow(comm, nranks, &gid, -1, &grown, NULL), ncclInvalidArgument,
                   "holds no unspent grow id");
      NCCLCHECK(ncclCommGetUniqueId(comm, &gid));
      write_id(&gid);
    }
    NCCLCHECK(ncclCommGrow(comm, nranks, rank == 0 ? &gid : NULL, -1, &grown, NULL));
  } else {
    gid = read_id();
    NCCLCHECK(ncclCommGrow(NULL, nranks, &gid, rank, &grown, NULL));
  }
  int32_t x = rank + 1, sum = 0;
  NCCLCHECK(ncclAllReduce(&x, &sum, 1, ncclInt32, ncclSum, grown, NULL));
  EXPECT(sum == nranks * (nranks + 1) / 2, "all_reduce on the grown communicator: %d", sum);
  NCCLCHECK(ncclCommDestroy(grown));
  if (comm != NULL) NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures ? 1 : 0;
}
