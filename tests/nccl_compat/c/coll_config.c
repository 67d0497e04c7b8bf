/* The nccl*Config collectives (NCCL 2.31's per-call options) on host memory: every one with
 * NULL and with an initialised ncclCollConfig_t gives the plain call's result; algSelection
 * picks an all_reduce's algorithm (the run's log shows which, with RCCLX_DEBUG=INFO); a forced
 * selection of an algorithm this library lacks, and a config never initialised, are
 * ncclInvalidArgument naming the field; an unforced one falls back to the library's choice. */
#include "nccl_test.h"

static int R, N;
static ncclComm_t comm;

/* sum over ranks of (rank + 1) * k, for element k */
static int sum_at(int k) { return N * (N + 1) / 2 * k; }

static void all_reduce_with(const ncclCollConfig_t* config, const char* label) {
  enum { kCount = 1000 };
  int32_t* buf = test_alloc(kCount * sizeof(int32_t));
  for (int k = 0; k < kCount; ++k) buf[k] = (R + 1) * k;
  NCCLCHECK(ncclAllReduceConfig(buf, buf, kCount, ncclInt32, ncclSum, comm, NULL, config));
  test_sync();
  int bad = 0;
  for (int k = 0; k < kCount; ++k) bad += buf[k] != sum_at(k);
  EXPECT(bad == 0, "%s: %d of %d elements wrong", label, bad, kCount);
  test_free(buf);
}

static void every_collective(const ncclCollConfig_t* cfg) {
  enum { kCount = 64 };
  int32_t *in = test_alloc(N * kCount * sizeof(int32_t)), *out = test_alloc(N * kCount * 4);
  for (int k = 0; k < N * kCount; ++k) in[k] = (R + 1) * 1000 + k;
  const int root = N - 1;
  NCCLCHECK(ncclBroadcastConfig(in, out, kCount, ncclInt32, root, comm, NULL, cfg));
  test_sync();
  EXPECT(out[5] == N * 1000 + 5, "broadcast: %d", out[5]);
  NCCLCHECK(ncclReduceConfig(in, out, kCount, ncclInt32, ncclMax, root, comm, NULL, cfg));
  test_sync();
  if (R == root) EXPECT(out[5] == N * 1000 + 5, "reduce: %d", out[5]);
  NCCLCHECK(ncclAllGatherConfig(in, out, kCount, ncclInt32, comm, NULL, cfg));
  test_sync();
  for (int r = 0; r < N; ++r)
    EXPECT(out[r * kCount + 3] == (r + 1) * 1000 + 3, "all_gather block %d", r);
  NCCLCHECK(ncclReduceScatterConfig(in, out, kCount, ncclInt32, ncclMin, comm, NULL, cfg));
  test_sync();
  EXPECT(out[2] == 1000 + R * kCount + 2, "reduce_scatter: %d", out[2]);
  NCCLCHECK(ncclAlltoAllConfig(in, out, kCount, ncclInt32, comm, NULL, cfg));
  test_sync();
  for (int r = 0; r < N; ++r)
    EXPECT(out[r * kCount] == (r + 1) * 1000 + R * kCount, "all_to_all block %d", r);
  NCCLCHECK(ncclGatherConfig(in, out, kCount, ncclInt32, root, comm, NULL, cfg));
  test_sync();
  if (R == root)
    for (int r = 0; r < N; ++r) EXPECT(out[r * kCount + 1] == (r + 1) * 1000 + 1, "gather %d", r);
  NCCLCHECK(ncclScatterConfig(in, out, kCount, ncclInt32, root, comm, NULL, cfg));
  test_sync();
  EXPECT(out[0] == N * 1000 + R * kCount, "scatter: %d", out[0]);
  test_free(in);
  test_free(out);
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, N, id, R));
  ncclCollConfig_t config = NCCL_COLLCONFIG_INITIALIZER;
  EXPECT(config.size == sizeof(ncclCollConfig_t) && config.forceAlgSelection == 1,
         "initializer: size %zu, forceAlgSelection %d", config.size, config.forceAlgSelection);
  all_reduce_with(NULL, "no config");
  all_reduce_with(&config, "initialised config");
  every_collective(NULL);
  every_collective(&config);
  /* CTA counts, cluster size, policy and profiler tag: accepted, ignored. */
  config.minCTAs = 4;
  config.maxCTAs = 16;
  config.cgaClusterSize = 2;
  config.userProfilerTag = 42;
  /* Algorithms: each marked by a distinct size in the log (RCCLX_DEBUG=INFO). */
  config.algSelection = "Tree";
  all_reduce_with(&config, "NCCL's Tree");
  config.algSelection = "NVLS,ring";
  all_reduce_with(&config, "the first one here");
  config.algSelection = "allgather:ring;allreduce:dda_flat";
  all_reduce_with(&config, "a per-collective selection");
  every_collective(&config);
  config.algSelection = "^NVLS";
  all_reduce_with(&config, "an exclusion");
  config.algSelection = "NVLS";
  int32_t x = 1;
  EXPECT_ERROR(ncclAllReduceConfig(&x, &x, 1, ncclInt32, ncclSum, comm, NULL, &config),
               ncclInvalidArgument, "config->algSelection 'NVLS'");
  EXPECT_ERROR(ncclAllGatherConfig(&x, &x, 0, ncclInt32, comm, NULL, &config), ncclInvalidArgument,
               "for all_gather");
  config.forceAlgSelection = 0;
  all_reduce_with(&config, "an unforced NVLS");
  ncclCollConfig_t raw;
  memset(&raw, 0, sizeof raw);
  EXPECT_ERROR(ncclAllReduceConfig(&x, &x, 1, ncclInt32, ncclSum, comm, NULL, &raw),
               ncclInvalidArgument, "config->magic 0x0");
  raw = config;
  raw.size = 8;
  EXPECT_ERROR(ncclBroadcastConfig(&x, &x, 1, ncclInt32, 0, comm, NULL, &raw), ncclInvalidArgument,
               "config->size 8");
  NCCLCHECK(ncclCommDestroy(comm));
  printf("rank %d: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
