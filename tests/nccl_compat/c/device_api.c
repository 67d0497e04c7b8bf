/* NCCL's device API from a C program on host memory (nccl_device.h compiled as C):
 * ncclCommQueryProperties reports this rank, the communicator's size, no GPU and no device-API
 * capability, and writes no further than an older, shorter struct's size; ncclDevCommCreate
 * refuses every requirement, its last error naming the call and each requirement it cannot
 * meet (an initialised struct, one cleared to zero as NCCL 2.28 code does, one asking nothing);
 * ncclDevCommDestroy refuses; bad arguments are ncclInvalidArgument; the communicator still
 * runs collectives afterwards. */
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
  still_usable();
  NCCLCHECK(ncclCommDestroy(comm));
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  EXPECT_ERROR(ncclCommQueryProperties(comm, &props), ncclInvalidUsage, "already destroyed");
  printf("rank %d: %s (%d failures)\n", R, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
