/* ncclConfig_t as other NCCL versions lay it out, passed to ncclCommInitRankConfig: the library
 * must read each by its own size. The structs below are NCCL's published layouts (2.17: 48
 * bytes, 2.27: 72, 2.28.9: 80, 2.31.2: 112, the last also as nccl.h's own) and a longer one of a
 * newer version; each initialises a 1-rank communicator non-blocking (blocking = 0 must be found
 * at its offset) with a commName that the library logs at NCCL_DEBUG=INFO. Bad magic, sizes,
 * versions and values are refused. Usage: config_layouts 0 1 */
#include <limits.h>
#include <stddef.h>

#include "nccl_test.h"

struct config_v21700 { /* NCCL 2.17 .. 2.18 */
  size_t size;
  unsigned int magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare;
};

struct config_v22700 { /* NCCL 2.27 */
  size_t size;
  unsigned int magic, version;
  int blocking, cgaClusterSize, minCTAs, maxCTAs;
  const char* netName;
  int splitShare, trafficClass;
  const char* commName;
  int collnetEnable, CTAPolicy, shrinkShare, nvlsCTAs;
};

struct config_v22800 { /* NCCL 2.28 */
  struct config_v22700 v27;
  int nChannelsPerNetPeer, nvlinkCentricSched;
};

struct config_v23100 { /* NCCL 2.29 .. 2.31 */
  struct config_v22800 v28;
  int graphUsageMode, numRmaCtx, maxP2pPeers, graphStreamOrdering, launchOrderImplicit, numRmaSig,
      rmaEagerInit, hostCftMode;
};

struct config_newer { /* a later version: more fields appended */
  struct config_v23100 v31;
  int more[5];
};

_Static_assert(sizeof(struct config_v21700) == 48, "2.17 layout");
_Static_assert(sizeof(struct config_v22700) == 72, "2.27 layout");
_Static_assert(sizeof(struct config_v22800) == 80, "2.28 layout");
_Static_assert(sizeof(struct config_v23100) == 112, "2.31 layout");
_Static_assert(sizeof(ncclConfig_t) == 112, "nccl.h is 2.31's layout");
_Static_assert(offsetof(ncclConfig_t, hostCftMode) == offsetof(struct config_v23100, hostCftMode),
               "nccl.h's hostCftMode sits where NCCL 2.31 puts it");

#define UNSET INT_MIN

static void fill_v27(struct config_v22700* c, size_t size, unsigned version, const char* name) {
  c->size = size;
  c->magic = NCCL_API_MAGIC;
  c->version = version;
  c->blocking = 0;
  c->cgaClusterSize = c->minCTAs = c->maxCTAs = UNSET;
  c->netName = NULL;
  c->splitShare = c->trafficClass = UNSET;
  c->commName = name;
  c->collnetEnable = c->CTAPolicy = c->shrinkShare = c->nvlsCTAs = UNSET;
}

/* A 1-rank communicator from `config`: non-blocking, so it must report ncclInProgress or
 * ncclSuccess, then reach ncclSuccess through ncclCommGetAsyncError. */
static void init_with(void* config, const char* what) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclGetUniqueId(&id));
  ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)config);
  EXPECT(r == ncclInProgress || r == ncclSuccess, "%s: init returned %d (%s)", what, (int)r,
         ncclGetLastError(NULL));
  if (comm == NULL) return;
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) NCCLCHECK(ncclCommGetAsyncError(comm, &state));
  EXPECT(state == ncclSuccess, "%s: state %d", what, (int)state);
  double x = 2, y = 0;
  NCCLCHECK(ncclAllReduce(&x, &y, 1, ncclFloat64, ncclSum, comm, NULL));
  EXPECT(y == 2, "%s: allreduce %g", what, y);
  NCCLCHECK(ncclCommDestroy(comm));
  printf("%s: initialised\n", what);
}

int main(int argc, char** argv) {
  int rank, nranks;
  test_init_args(argc, argv, &rank, &nranks);

  struct config_v21700 v17 = {
      sizeof v17, NCCL_API_MAGIC, NCCL_VERSION(2, 17, 1), 0, UNSET, UNSET, UNSET, NULL, UNSET};
  init_with(&v17, "layout-48");
  struct config_v22700 v27;
  fill_v27(&v27, sizeof v27, NCCL_VERSION(2, 27, 7), "layout-72");
  init_with(&v27, "layout-72");
  struct config_v22800 v28;
  fill_v27(&v28.v27, sizeof v28, NCCL_VERSION(2, 28, 9), "layout-80");
  v28.nChannelsPerNetPeer = v28.nvlinkCentricSched = UNSET;
  init_with(&v28, "layout-80");
  /* NCCL 2.31.2's, with its new fields set as a program written for it sets them. */
  struct config_v23100 v31;
  fill_v27(&v31.v28.v27, sizeof v31, 23102, "layout-112");
  v31.v28.nChannelsPerNetPeer = v31.v28.nvlinkCentricSched = UNSET;
  v31.graphUsageMode = v31.maxP2pPeers = v31.graphStreamOrdering = UNSET;
  v31.launchOrderImplicit = v31.numRmaSig = UNSET;
  v31.numRmaCtx = 2;
  v31.rmaEagerInit = 1;
  v31.hostCftMode = ncclHostCftDisable;
  init_with(&v31, "layout-112");
  struct config_newer newer;
  memcpy(&newer.v31, &v31, sizeof v31);
  newer.v31.v28.v27.size = sizeof newer;
  newer.v31.v28.v27.version = NCCL_VERSION(2, 32, 0);
  newer.v31.v28.v27.commName = "layout-newer";
  for (int i = 0; i < 5; ++i) newer.more[i] = 12345; /* fields this library does not know */
  init_with(&newer, "layout-newer");
  ncclConfig_t mine = NCCL_CONFIG_INITIALIZER;
  EXPECT(mine.size == 112 && mine.magic == NCCL_API_MAGIC && mine.version == NCCL_VERSION_CODE &&
             mine.blocking == INT_MIN && mine.commName == NULL &&
             mine.nvlinkCentricSched == INT_MIN && mine.maxP2pPeers == INT_MIN &&
             mine.hostCftMode == INT_MIN,
         "NCCL_CONFIG_INITIALIZER");
  mine.blocking = 0;
  mine.commName = "layout-initializer";
  init_with(&mine, "layout-initializer");

  ncclUniqueId id;
  ncclComm_t comm = NULL;
  NCCLCHECK(ncclGetUniqueId(&id));
  struct config_v22700 bad;
  fill_v27(&bad, 16, NCCL_VERSION(2, 27, 7), "bad");
  EXPECT_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&bad), ncclInvalidArgument,
               "config->size 16");
  fill_v27(&bad, 1u << 20, NCCL_VERSION(2, 27, 7), "bad");
  EXPECT_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&bad), ncclInvalidArgument,
               "config->size 1048576");
  fill_v27(&bad, sizeof bad, 900, "bad");
  EXPECT_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&bad), ncclInvalidArgument,
               "config->version 900");
  fill_v27(&bad, sizeof bad, NCCL_VERSION(2, 27, 7), "bad");
  bad.magic = 0xdeadbeef;
  EXPECT_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&bad), ncclInvalidArgument,
               "config->magic 0xdeadbeef");
  fill_v27(&bad, sizeof bad, NCCL_VERSION(2, 27, 7), "bad");
  bad.blocking = 5;
  EXPECT_ERROR(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&bad), ncclInvalidArgument,
               "config->blocking 5");
  EXPECT(comm == NULL, "a refused config left a handle");
  /* A blocking 2.17-layout config initialises at once. */
  v17.blocking = 1;
  NCCLCHECK(ncclCommInitRankConfig(&comm, 1, id, 0, (ncclConfig_t*)&v17));
  NCCLCHECK(ncclCommDestroy(comm));
  /* ncclCommInitRankScalable with two ids (the first one is used), then revoke: later calls
   * are refused, destroy is not. */
  ncclUniqueId ids[2];
  NCCLCHECK(ncclGetUniqueId(&ids[0]));
  NCCLCHECK(ncclGetUniqueId(&ids[1]));
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1; /* whatever NCCL_COMM_BLOCKING says */
  NCCLCHECK(ncclCommInitRankScalable(&comm, 1, 0, 2, ids, &blocking));
  NCCLCHECK(ncclCommRevoke(comm, 0));
  double x = 1;
  EXPECT_ERROR(ncclAllReduce(&x, &x, 1, ncclFloat64, ncclSum, comm, NULL), ncclInvalidUsage,
               "revoked");
  NCCLCHECK(ncclCommDestroy(comm));
  EXPECT_ERROR(ncclCommInitRankScalable(&comm, 1, 0, 0, ids, NULL), ncclInvalidArgument, "nId 0");
  /* NCCL_COMM_BLOCKING=0 (set by the test) makes an initialisation without a config
   * non-blocking; a config's blocking = 1 still wins. */
  const char* blockingEnv = getenv("NCCL_COMM_BLOCKING");
  if (blockingEnv != NULL && strcmp(blockingEnv, "0") == 0) {
    NCCLCHECK(ncclGetUniqueId(&id));
    ncclResult_t r = ncclCommInitRank(&comm, 1, id, 0);
    EXPECT(r == ncclInProgress, "NCCL_COMM_BLOCKING=0: init returned %d", (int)r);
    ncclResult_t state = ncclInProgress;
    while (state == ncclInProgress) NCCLCHECK(ncclCommGetAsyncError(comm, &state));
    EXPECT(state == ncclSuccess, "NCCL_COMM_BLOCKING=0: state %d", (int)state);
    NCCLCHECK(ncclCommDestroy(comm));
    ncclConfig_t blockingCfg = NCCL_CONFIG_INITIALIZER;
    blockingCfg.blocking = 1;
    NCCLCHECK(ncclGetUniqueId(&id));
    NCCLCHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &blockingCfg));
    NCCLCHECK(ncclCommDestroy(comm));
    printf("NCCL_COMM_BLOCKING=0: honoured\n");
  }
  printf("config_layouts: %s (%d failures)\n", g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
