/* NCCL's device API from a C program on host memory (nccl_device.h compiled as C):
 * ncclCommQueryProperties reports this rank, the communicator's size, no GPU and no device-API
 * capability, and writes no further than an older, shorter struct's size; ncclDevCommCreate
 * refuses every requirement, its last error naming the call and each requirement it cannot
 * meet (an initialised struct, one cleared to zero as NCCL 2.28 code does, one asking nothing);
 * ncclDevCommDestroy refuses; the host team calls agree with the properties (the world, each
 * rank its own LSA and CFT team, the rail team the world) and convert ranks; the window address
 * queries (on a window registered with NCCL_WIN_STRICT_ORDERING) give this rank's own memory
 * and refuse a peer's, multimem and CFT; the LSA, GIN and CFT barrier requirements refuse; bad
 * arguments are ncclInvalidArgument; the communicator still runs collectives afterwards. */
#include "nccl_device.h"
#include "nccl_test.h"

static int R, N;
static ncclComm_t comm;

static void query_properties(void) {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  props.rank = props.nRanks = props.cudaDev = 77;
  props.deviceApiSupport = props.multimemSupport = props.hostRmaSupport = true;
  props.ginSupport[NCCL_GIN_TYPE_PROXY] = true;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  EXPECT(props.size == sizeof props && props.magic == NCCL_API_MAGIC &&
             props.version == NCCL_VERSION_CODE,
         "header changed: size %zu magic 0x%x version %u", props.size, props.magic, props.version);
  EXPECT(props.rank == R && props.nRanks == N, "rank %d of %d", props.rank, props.nRanks);
  EXPECT(props.cudaDev == -1 && props.nvmlDev == -1, "devices %d, %d (host memory)", props.cudaDev,
         props.nvmlDev);
  EXPECT(!props.deviceApiSupport && !props.multimemSupport && !props.hostRmaSupport,
         "capabilities %d %d %d", props.deviceApiSupport, props.multimemSupport,
         props.hostRmaSupport);
  EXPECT(props.ginType == NCCL_GIN_TYPE_NONE && props.railedGinType == NCCL_GIN_TYPE_NONE &&
             props.ginConnectionType == NCCL_GIN_CONNECTION_NONE,
         "GIN %d %d %d", props.ginType, props.railedGinType, props.ginConnectionType);
  int gins = 0;
  for (int i = 0; i < 64; ++i) gins += props.ginSupport[i];
  EXPECT(gins == 0, "%d GIN types supported", gins);
  EXPECT(props.nLsaTeams == N, "%d LSA teams of one rank each", props.nLsaTeams);
  EXPECT(props.devCommRuntimeVersionSize == 0, "runtime version size %zu",
         props.devCommRuntimeVersionSize);

  /* A struct of an older, shorter layout: only the fields its size covers are written. */
  ncclCommProperties_t older = NCCL_COMM_PROPERTIES_INITIALIZER;
  older.size = offsetof(ncclCommProperties_t, nvmlDev);
  older.nvmlDev = 1234;
  older.ginType = NCCL_GIN_TYPE_GDAKI;
  NCCLCHECK(ncclCommQueryProperties(comm, &older));
  EXPECT(older.rank == R && older.nRanks == N && older.cudaDev == -1, "older: rank %d of %d",
         older.rank, older.nRanks);
  EXPECT(older.nvmlDev == 1234 && older.ginType == NCCL_GIN_TYPE_GDAKI,
         "fields past size were written: nvmlDev %d ginType %d", older.nvmlDev, older.ginType);

  ncclCommProperties_t raw;
  memset(&raw, 0, sizeof raw);
  EXPECT_ERROR(ncclCommQueryProperties(comm, &raw), ncclInvalidArgument,
               "ncclCommQueryProperties: props->magic 0x0 is not NCCL_API_MAGIC");
  EXPECT_ERROR(ncclCommQueryProperties(comm, NULL), ncclInvalidArgument, "props is NULL");
  EXPECT_ERROR(ncclCommQueryProperties(NULL, &props), ncclInvalidArgument, "comm is NULL");
}

static void create_refused(void) {
  ncclDevComm devComms[2];
  memset(devComms, 0, sizeof devComms);
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  EXPECT(reqs.size == sizeof reqs && reqs.magic == NCCL_API_MAGIC && reqs.ginContextCount == 4 &&
             reqs.ginStrongSignalsRequired && reqs.ginTrafficClass == NCCL_CONFIG_UNDEF_INT,
         "initializer: size %zu contexts %d", reqs.size, reqs.ginContextCount);
  reqs.lsaBarrierCount = 16;
  reqs.lsaMultimem = true;
  reqs.ginSignalCount = 4;
  EXPECT_ERROR(ncclDevCommCreate(comm, &reqs, &devComms[1]), ncclInvalidUsage,
               "ncclDevCommCreate: RCCLX provides no device communicators");
  const char* last = ncclGetLastError(comm);
  EXPECT(strstr(last, "lsaMultimem (multimem)") && strstr(last, "lsaBarrierCount 16 (LSA") &&
             strstr(last, "ginSignalCount 4 (GIN)"),
         "the requirements are not all named: %s", last);
  EXPECT(devComms[1].nRanks == 0, "outDevComm was written");

  /* Cleared to zero, then set, as code written for NCCL 2.28 does. */
  memset(&reqs, 0, sizeof reqs);
  reqs.barrierCount = 2;
  EXPECT_ERROR(ncclDevCommCreate(comm, &reqs, &devComms[0]), ncclInvalidUsage,
               "ncclDevCommCreate: RCCLX provides no device communicators");
  EXPECT(strstr(ncclGetLastError(comm), "barrierCount 2 (world barriers)") != NULL, "%s",
         ncclGetLastError(comm));

  ncclDevCommRequirements nothing = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  EXPECT_ERROR(ncclDevCommCreate(comm, &nothing, &devComms[0]), ncclInvalidUsage,
               "asks for nothing");
  reqs.magic = 0x1234;
  EXPECT_ERROR(ncclDevCommCreate(comm, &reqs, &devComms[0]), ncclInvalidArgument,
               "reqs->magic 0x1234 is not NCCL_API_MAGIC");
  EXPECT_ERROR(ncclDevCommCreate(comm, NULL, &devComms[0]), ncclInvalidArgument, "reqs is NULL");
  EXPECT_ERROR(ncclDevCommCreate(comm, &nothing, NULL), ncclInvalidArgument, "outDevComm is NULL");
  EXPECT_ERROR(ncclDevCommDestroy(comm, &devComms[0]), ncclInvalidUsage,
               "ncclDevCommDestroy: devComm was not made by ncclDevCommCreate");
  EXPECT_ERROR(pncclDevCommDestroy(comm, NULL), ncclInvalidArgument, "devComm is NULL");
}

static void team_arithmetic(void) {
  ncclTeam_t world = {8, 5, 1};
  ncclTeam_t lsa = ncclTeamInnerFactor(world, 4);  /* ranks 4..7, this one 1st of them */
  ncclTeam_t rail = ncclTeamOuterFactor(world, 4); /* ranks 1 and 5, this one 2nd */
  EXPECT(lsa.nRanks == 4 && lsa.rank == 1 && lsa.stride == 1, "inner %d %d %d", lsa.nRanks,
         lsa.rank, lsa.stride);
  EXPECT(rail.nRanks == 2 && rail.rank == 1 && rail.stride == 4, "outer %d %d %d", rail.nRanks,
         rail.rank, rail.stride);
  EXPECT(ncclTeamRankIsMember(lsa, world, 7) && !ncclTeamRankIsMember(lsa, world, 3),
         "membership in the inner team");
  EXPECT(ncclTeamRankIsMember(rail, world, 1) && !ncclTeamRankIsMember(rail, world, 6),
         "membership in the outer team");
  EXPECT(ncclTeamRankToTeam(lsa, world, 7) == 3 && ncclTeamRankToTeam(world, rail, 0) == 1,
         "rank conversions %d %d", ncclTeamRankToTeam(lsa, world, 7),
         ncclTeamRankToTeam(world, rail, 0));
  EXPECT(ncclGetResourceBufferOffset(3) == 384, "resource buffer 3 at %zu",
         ncclGetResourceBufferOffset(3));
}

/* The parent rank (0-based place in `parent`) of the index-th rank of `parent` outside
 * `subset`, found by walking parent's places; -1 if there is none. */
static int outside_by_walking(ncclTeam_t parent, ncclTeam_t subset, int index) {
  const int step = subset.stride / parent.stride;
  for (int place = 0, seen = 0; place < parent.nRanks; ++place) {
    const int fromMe = place - parent.rank;
    const int inSubset = fromMe % step == 0 && subset.rank + fromMe / step >= 0 &&
                         subset.rank + fromMe / step < subset.nRanks;
    if (!inSubset && seen++ == index) return place;
  }
  return -1;
}

/* NCCL 2.31's ncclTeamRankInDifference against a walk, for every sub-team with the caller in
 * it (strides up and down, every place and size) of parents of up to 12 ranks. */
static void team_difference(void) {
  int checked = 0;
  for (int n = 1; n <= 12; ++n)
    for (int me = 0; me < n; ++me)
      for (int step = -6; step <= 6; ++step)
        for (int size = 1; step != 0 && size <= n; ++size)
          for (int mine = 0; mine < size; ++mine) {
            const int first = me - mine * step, last = me + (size - 1 - mine) * step;
            if (first < 0 || first >= n || last < 0 || last >= n) continue;
            const ncclTeam_t parent = {n, me, 3}, subset = {size, mine, 3 * step};
            for (int i = 0; i < n - size; ++i, ++checked) {
              const int got = ncclTeamRankInDifference(parent, subset, i);
              const int want = outside_by_walking(parent, subset, i);
              if (got != want) {
                EXPECT(got == want,
                       "ncclTeamRankInDifference({%d,%d,3}, {%d,%d,%d}, %d) = %d, not %d", n, me,
                       size, mine, 3 * step, i, got, want);
                return;
              }
            }
          }
  EXPECT(checked > 10000, "only %d team differences checked", checked);
}

static int same_team(ncclTeam_t t, int nRanks, int rank, int stride) {
  return t.nRanks == nRanks && t.rank == rank && t.stride == stride;
}

static void host_teams(void) {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  NCCLCHECK(ncclCommQueryProperties(comm, &props));
  ncclTeam_t world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
  EXPECT(same_team(world, N, R, 1), "world {%d %d %d}", world.nRanks, world.rank, world.stride);
  EXPECT(same_team(lsa, 1, 0, 1), "lsa {%d %d %d}", lsa.nRanks, lsa.rank, lsa.stride);
  EXPECT(props.nLsaTeams * lsa.nRanks == props.nRanks, "%d LSA teams of %d ranks, %d ranks",
         props.nLsaTeams, lsa.nRanks, props.nRanks);
  EXPECT(same_team(rail, N, R, 1), "rail {%d %d %d}", rail.nRanks, rail.rank, rail.stride);
  ncclTeam_t outer = ncclTeamOuterFactor(world, lsa.nRanks);
  EXPECT(same_team(rail, outer.nRanks, outer.rank, outer.stride), "rail is not world / lsa");
  EXPECT(same_team(ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT), 1, 0, 1), "CFT flat team");
  EXPECT(same_team(pncclTeamCft(comm, NCCL_CFT_TEAM_HIER_LSA), 1, 0, 1), "CFT LSA team");
  EXPECT(same_team(ncclTeamCftMultimem(comm), 1, 0, 1), "CFT multimem team");

  for (int k = 0; k < N; ++k) {
    EXPECT(ncclTeamRankToWorld(comm, world, k) == k, "world rank %d -> %d", k,
           ncclTeamRankToWorld(comm, world, k));
    EXPECT(ncclTeamRankToWorld(comm, rail, k) == k, "rail rank %d", k);
  }
  EXPECT(ncclTeamRankToWorld(comm, lsa, 0) == R, "LSA rank 0 is world rank %d",
         ncclTeamRankToWorld(comm, lsa, 0));
  EXPECT(ncclTeamRankToLsa(comm, world, R) == 0, "this rank's LSA rank %d",
         ncclTeamRankToLsa(comm, world, R));
  EXPECT(pncclTeamRankToLsa(comm, lsa, 0) == 0, "LSA rank of LSA rank 0");

  /* Failures: -1 or the empty team, and a last error naming the call and the value. */
  EXPECT(ncclTeamRankToLsa(comm, world, (R + 1) % N) == -1, "a peer has an LSA rank");
  const int peer = (R + 1) % N;
  char want[96];
  snprintf(want, sizeof want, "ncclTeamRankToLsa: rank %d of team {nRanks %d, rank %d", peer, N, R);
  EXPECT(strstr(ncclGetLastError(NULL), want) && strstr(ncclGetLastError(NULL), "LSA team"), "%s",
         ncclGetLastError(NULL));
  EXPECT(ncclTeamRankToWorld(comm, world, N) == -1, "rank N is a member");
  EXPECT(strstr(ncclGetLastError(NULL), "ncclTeamRankToWorld: rank ") != NULL, "%s",
         ncclGetLastError(NULL));
  ncclTeam_t wide = {2, 0, N}; /* this rank and the one N ranks on, which does not exist */
  EXPECT(ncclTeamRankToWorld(comm, wide, 1) == -1, "a member past the world");
  snprintf(want, sizeof want, "would be world rank %d, outside the communicator's 0..%d", R + N,
           N - 1);
  EXPECT(strstr(ncclGetLastError(NULL), want) != NULL, "%s", ncclGetLastError(NULL));
  ncclTeam_t none = ncclTeamCft(comm, (ncclCftTeamMode_t)7);
  EXPECT(none.nRanks == 0 && none.rank == -1, "CFT team of mode 7 {%d %d}", none.nRanks, none.rank);
  EXPECT(strstr(ncclGetLastError(NULL), "ncclTeamCft: mode 7 is not") != NULL, "%s",
         ncclGetLastError(NULL));
  none = ncclTeamWorld(NULL);
  EXPECT(none.nRanks == 0 && none.rank == -1 && none.stride == 0, "team of NULL");
  EXPECT(strstr(ncclGetLastError(NULL), "ncclTeamWorld: comm is NULL") != NULL, "%s",
         ncclGetLastError(NULL));
}

static void window_queries(void) {
  const size_t bytes = 4096;
  char* buf = test_alloc(bytes);
  ncclWindow_t win = NULL;
  /* NCCL 2.31's strict ordering is what RCCLX's windows always give; an unknown flag is
   * refused (by every rank, so nothing collective starts). */
  EXPECT_ERROR(ncclCommWindowRegister(comm, buf, bytes, &win, 0x4), ncclInvalidArgument,
               "winFlags 0x4 has bits other than NCCL_WIN_COLL_SYMMETRIC and "
               "NCCL_WIN_STRICT_ORDERING");
  NCCLCHECK(ncclCommWindowRegister(comm, buf, bytes, &win, NCCL_WIN_STRICT_ORDERING));
  void* p = NULL;
  NCCLCHECK(ncclGetLsaDevicePointer(win, 64, 0, &p));
  EXPECT(p == buf + 64, "LSA pointer %p, window at %p", p, (void*)buf);
  p = NULL;
  NCCLCHECK(pncclGetPeerDevicePointer(win, 0, R, &p));
  EXPECT(p == buf, "own peer pointer %p, window at %p", p, (void*)buf);
  if (N > 1) {
    EXPECT_ERROR(ncclGetPeerDevicePointer(win, 0, (R + 1) % N, &p), ncclInvalidUsage,
                 "no access to another rank's window memory");
  }
  EXPECT_ERROR(ncclGetPeerDevicePointer(win, 0, N, &p), ncclInvalidArgument,
               "is not a rank of the window's communicator");
  EXPECT_ERROR(ncclGetLsaDevicePointer(win, 0, 1, &p), ncclInvalidArgument,
               "ncclGetLsaDevicePointer: lsaRank 1 is outside this rank's LSA team");
  EXPECT_ERROR(ncclGetLsaDevicePointer(win, bytes, 0, &p), ncclInvalidArgument,
               "offset 4096 is outside the window's 4096 bytes");
  EXPECT_ERROR(ncclGetLsaDevicePointer(win, 0, 0, NULL), ncclInvalidArgument, "outPtr is NULL");
  EXPECT_ERROR(ncclGetLsaDevicePointer(NULL, 0, 0, &p), ncclInvalidArgument, "window is NULL");
  EXPECT_ERROR(ncclGetLsaMultimemDevicePointer(win, 0, &p), ncclInvalidUsage,
               "ncclGetLsaMultimemDevicePointer: RCCLX provides no multimem");
  ncclMultimemHandle_t mm = {NULL};
  EXPECT_ERROR(ncclGetMultimemDevicePointer(win, 0, mm, &p), ncclInvalidUsage,
               "multimemSupport = 0");
  ncclCftLeId le = 0;
  size_t leOffset = 0;
  EXPECT_ERROR(ncclGetMultimemDeviceLeInfo(win, 0, &le, &leOffset), ncclInvalidUsage,
               "no collective fabric transport");
  EXPECT_ERROR(ncclGetCftDeviceLeInfo(win, 0, 0, ncclTeamLsa(comm), &le, &leOffset),
               ncclInvalidUsage, "(peerCft 0)");
  EXPECT_ERROR(ncclGetPeerDeviceLeInfo(win, 0, R, &le, NULL), ncclInvalidArgument,
               "leOffset is NULL");

  ncclLsaBarrierHandle_t lsaBarrier = {0, 0};
  ncclGinBarrierHandle_t ginBarrier = {0, 0};
  ncclDevResourceRequirements_t req;
  memset(&req, 0, sizeof req);
  EXPECT_ERROR(ncclLsaBarrierCreateRequirement(ncclTeamLsa(comm), 4, &lsaBarrier, &req),
               ncclInvalidUsage, "ncclLsaBarrierCreateRequirement: LSA barriers live in a device");
  EXPECT(lsaBarrier.nBarriers == 0 && req.bufferSize == 0, "the refusal wrote its outputs");
  EXPECT_ERROR(ncclLsaBarrierCreateRequirement(ncclTeamLsa(comm), 4, &lsaBarrier, NULL),
               ncclInvalidArgument, "outReq is NULL");
  EXPECT_ERROR(ncclGinBarrierCreateRequirement(comm, ncclTeamRail(comm), 2, &ginBarrier, &req),
               ncclInvalidUsage, "RCCLX has no GIN back-end");
  EXPECT_ERROR(ncclGinBarrierCreateRequirement(comm, ncclTeamRail(comm), -1, &ginBarrier, &req),
               ncclInvalidArgument, "nBarriers -1 is negative");
  /* Declared by NCCL 2.31's headers (not exported by its library); RCCLX's refuses it. */
  ncclCftBarrierHandle_t cftBarrier = {0, 0};
  EXPECT_ERROR(
      ncclCftBarrierCreateRequirement(ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT), 2, &cftBarrier, &req),
      ncclInvalidUsage,
      "ncclCftBarrierCreateRequirement: CFT barriers need NCCL's collective fabric "
      "transport");
  EXPECT(cftBarrier.nBarriers == 0 && req.bufferSize == 0, "the CFT refusal wrote its outputs");
  EXPECT_ERROR(pncclCftBarrierCreateRequirement(ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT), -3,
                                                &cftBarrier, &req),
               ncclInvalidArgument, "nBarriers -3 is negative");
  EXPECT_ERROR(
      ncclCftBarrierCreateRequirement(ncclTeamCft(comm, NCCL_CFT_TEAM_FLAT), 2, NULL, &req),
      ncclInvalidArgument, "outHandle is NULL");

  NCCLCHECK(ncclCommWindowDeregister(comm, win));
  EXPECT_ERROR(ncclGetLsaDevicePointer(win, 0, 0, &p), ncclInvalidArgument, "not a live handle");
  test_free(buf);
}

static void still_usable(void) {
  int32_t* buf = test_alloc(16 * sizeof(int32_t));
  for (int k = 0; k < 16; ++k) buf[k] = R + k;
  NCCLCHECK(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, comm, NULL));
  test_sync();
  EXPECT(buf[3] == N * (N - 1) / 2 + 3 * N, "all_reduce after the refusals: %d", buf[3]);
  test_free(buf);
}

int main(int argc, char** argv) {
  test_init_args(argc, argv, &R, &N);
  ncclUniqueId id = test_unique_id();
  NCCLCHECK(ncclCommInitRank(&comm, N, id, R));
  query_properties();
  create_refused();
  team_arithmetic();
  team_difference();
  host_teams();
  window_queries();
  still_usable();
  NCCLCHECK(ncclCommDestroy(comm));
  EXPECT(ncclTeamLsa(comm).nRanks == 0, "a team of a destroyed communicator");
  EXPECT(strstr(ncclGetLastError(NULL), "ncclTeamLsa: comm was already destroyed") != NULL, "%s",
         ncclGetLastError(NULL));
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  EXPECT_ERROR(ncclCommQueryProperties(comm, &props), ncclInvalidUsage, "already destroyed");
  printf("rank %d: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
