/* All-reduce through NCCL's C API, one process per rank. Compiled against RCCLX's nccl.h and
 * run on its libnccl.so.2; the same source builds against NVIDIA's NCCL. Without a GPU the
 * communicator works on host memory (what this example uses); with one, pass device buffers
 * and a stream, as with NCCL.
 *
 * Usage: nccl_all_reduce RANK NRANKS, with NCCL_COMM_ID=host:port set alike on every rank
 * (rank 0 listens there). */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    ncclResult_t res_ = (call);                                                \
    if (res_ != ncclSuccess) {                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(res_), \
              ncclGetLastError(NULL));                                         \
      return 1;                                                                \
    }                                                                          \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s RANK NRANKS\n", argv[0]);
    return 2;
  }
  const int rank = atoi(argv[1]), nranks = atoi(argv[2]);

  ncclUniqueId id;
  CHECK(ncclGetUniqueId(&id)); /* with NCCL_COMM_ID every rank makes the same id */
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));

  float buf[4];
  for (int i = 0; i < 4; ++i) buf[i] = (float)(rank + 1);
  CHECK(ncclAllReduce(buf, buf, 4, ncclFloat32, ncclSum, comm, NULL)); /* in place */
  printf("nccl rank %d of %d: all_reduce sum = [%.1f, %.1f, %.1f, %.1f]\n", rank, nranks, buf[0],
         buf[1], buf[2], buf[3]);

  CHECK(ncclCommDestroy(comm));
  return 0;
}
