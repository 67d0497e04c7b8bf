/* ncclCommDestroy inside an open group that holds a call on the communicator: refused with
 * ncclInvalidUsage (the call runs at ncclGroupEnd, and destroying first would drop it); the
 * communicator stays usable, the all_reduce runs at ncclGroupEnd, and destroy succeeds after. */
#include "nccl_test.h"

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, test_unique_id(), rank));
  float in[4], out[4];
  for (int i = 0; i < 4; ++i) {
    in[i] = (float)(1 + i);
    out[i] = -1;
  }
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce(in, out, 4, ncclFloat32, ncclSum, comm, NULL));
  EXPECT_ERROR(ncclCommDestroy(comm), ncclInvalidUsage, "call ncclGroupEnd first");
  NCCLCHECK(ncclGroupEnd());
  for (int i = 0; i < 4; ++i)
    EXPECT(out[i] == (float)((1 + i) * nranks), "out[%d] = %g, expected %d", i, out[i],
           (1 + i) * nranks);
  /* A group holding nothing for the communicator does not stop its destroy. */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclCommDestroy(comm));
  NCCLCHECK(ncclGroupEnd());
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures ? 1 : 0;
}
