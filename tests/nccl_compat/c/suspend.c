/* ncclCommSuspend / ncclCommResume / ncclCommMemStats on every rank: the statistics before and
 * after a collective, a suspended communicator refusing calls and resuming, and the refusals.
 * Built with NCCL_TEST_GPU (device buffers), the communicator's GPU memory shows in the totals. */
#include "nccl_test.h"

static uint64_t stat_of(ncclComm_t comm, ncclCommMemStat_t stat) {
  uint64_t v = 12345;
  NCCLCHECK(ncclCommMemStats(comm, stat, &v));
  return v;
}

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, test_unique_id(), rank));
  float* buf = (float*)test_alloc(1024 * sizeof(float));
  NCCLCHECK(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, 0));
  test_sync();
  const uint64_t total = stat_of(comm, ncclStatGpuMemTotal);
#ifdef NCCL_TEST_GPU
  EXPECT(total > 0, "a GPU communicator after an all_reduce holds %llu bytes",
         (unsigned long long)total);
#else
  EXPECT(total == 0, "a host communicator holds %llu bytes of GPU memory",
         (unsigned long long)total);
#endif
  EXPECT(stat_of(comm, ncclStatGpuMemPersist) == total, "persistent = total");
  EXPECT(stat_of(comm, ncclStatGpuMemSuspend) == 0, "nothing suspendable");
  EXPECT(stat_of(comm, ncclStatGpuMemSuspended) == 0, "not suspended");
  uint64_t v = 0;
  EXPECT_ERROR(ncclCommMemStats(comm, (ncclCommMemStat_t)7, &v), ncclInvalidArgument,
               "stat 7 is not an ncclCommMemStat_t");
  EXPECT_ERROR(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL), ncclInvalidArgument,
               "value is NULL");

  EXPECT_ERROR(ncclCommSuspend(comm, 0x6), ncclInvalidArgument, "flags 0x6");
  EXPECT_ERROR(ncclCommResume(comm), ncclInvalidUsage, "comm is not suspended");
  NCCLCHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM));
  EXPECT(stat_of(comm, ncclStatGpuMemSuspended) == 1, "suspended");
  EXPECT(stat_of(comm, ncclStatGpuMemTotal) == total, "nothing released");
  EXPECT_ERROR(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, 0), ncclInvalidUsage,
               "comm is suspended");
  EXPECT_ERROR(ncclCommSuspend(comm, 0), ncclInvalidUsage, "already suspended");
  NCCLCHECK(ncclCommResume(comm));
  EXPECT(stat_of(comm, ncclStatGpuMemSuspended) == 0, "resumed");

  for (int i = 0; i < 1024; ++i) buf[i] = (float)(rank + 1);
  NCCLCHECK(ncclAllReduce(buf, buf, 1024, ncclFloat32, ncclSum, comm, 0));
  test_sync();
  const float want = (float)(nranks * (nranks + 1) / 2);
  EXPECT(buf[0] == want && buf[1023] == want, "after resume: %g, expected %g", buf[0], want);
  test_free(buf);
  NCCLCHECK(ncclCommDestroy(comm));
  EXPECT_ERROR(ncclCommMemStats(comm, ncclStatGpuMemTotal, &v), ncclInvalidUsage, "destroyed");
  printf("rank %d: passed (%d failures)\n", rank, g_failures);
  return g_failures;
}
