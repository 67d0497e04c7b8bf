/* What serves a unique id of ncclGetUniqueId (a store in this process: a socket and a thread)
 * ends with the id's use: after every communicator made from it is destroyed or aborted, after
 * joining it failed, and, for ids never joined here (bad arguments leave an id usable, as in
 * NCCL), beyond the bound on how many are kept. One process, one rank; argv[3] names the case,
 * argv[4] the rounds. */
#define _DEFAULT_SOURCE
#include <dirent.h>

#include "nccl_test.h"

static int count_entries(const char* dir) {
  DIR* d = opendir(dir);
  if (d == NULL) exit(120);
  int n = 0;
  for (struct dirent* e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

static void one_round(const char* mode) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclGetUniqueId(&id));
  if (strcmp(mode, "unused") == 0) return;
  if (strcmp(mode, "bad_arguments") == 0) {
    EXPECT_ERROR(ncclCommInitRank(&comm, 2, id, 5), ncclInvalidArgument, "rank 5 is out of range");
    return;
  }
  if (strcmp(mode, "failed_join") == 0) { /* rank 1 never comes: a timeout while joining */
    EXPECT(ncclCommInitRank(&comm, 2, id, 0) != ncclSuccess, "a 2-rank init without rank 1");
    return;
  }
  NCCLCHECK(ncclCommInitRank(&comm, 1, id, 0));
  float x[4] = {1, 2, 3, 4};
  NCCLCHECK(ncclAllReduce(x, x, 4, ncclFloat32, ncclSum, comm, 0));
  if (strcmp(mode, "abort") == 0) {
    NCCLCHECK(ncclCommAbort(comm));
  } else {
    NCCLCHECK(ncclCommDestroy(comm));
  }
}

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  const char* mode = argc > 3 ? argv[3] : "destroy";
  const int rounds = argc > 4 ? atoi(argv[4]) : 40;
  one_round("destroy"); /* the library's own one-time threads start here */
  const int fds = count_entries("/proc/self/fd"), threads = count_entries("/proc/self/task");
  for (int i = 0; i < rounds; ++i) one_round(mode);
  const int more_fds = count_entries("/proc/self/fd") - fds;
  const int more_threads = count_entries("/proc/self/task") - threads;
  printf("%s x %d: %d more fds, %d more threads\n", mode, rounds, more_fds, more_threads);
  /* Ids never joined here are kept up to a bound (64), since other processes may join them. */
  const int unjoined = strcmp(mode, "unused") == 0 || strcmp(mode, "bad_arguments") == 0;
  const int allowed = (unjoined ? 64 : 0) + 2;
  EXPECT(more_fds <= allowed, "%d more fds after %d rounds of %s", more_fds, rounds, mode);
  EXPECT(more_threads <= allowed, "%d more threads after %d rounds of %s", more_threads, rounds,
         mode);
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures ? 1 : 0;
}
