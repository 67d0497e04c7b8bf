/* NCCL 2.31's LL all-to-all and GIN scratch calls and ncclResetDebugInitInternal from a C
 * program (one process, no communicator needed):
 * - ncclLLA2ACalcSlots is maxElts * ceil(maxEltSize / 8), leaving the last error as it was
 *   (ncclGetLastError's pointer stays the same across errors, as NCCL's);
 *   a negative argument or a count past INT_MAX gives -1 and a last error naming the value;
 * - ncclLLA2ACreateRequirement, ncclGinOutboxCreateRequirement and
 *   ncclGinInboxA2ACreateRequirement refuse (ncclInvalidUsage, the reason in the last error)
 *   and write neither output; a negative count or a NULL output is ncclInvalidArgument;
 * - ncclResetDebugInitInternal, which nccl.h does not declare (declared here, as a program
 *   naming it must), re-reads RCCLX_DEBUG: of three refusals, made at NONE, at WARN and at
 *   NONE again, only the second is logged (the test reads stderr). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>

#include "nccl_device.h"
#include "nccl_test.h"

void ncclResetDebugInitInternal(void);
void pncclResetDebugInitInternal(void);

static void calc_slots(void) {
  EXPECT(ncclGetVersion(NULL) == ncclInvalidArgument, "a last error to keep");
  /* As NCCL's, the last error lives in a fixed per-thread buffer: a pointer kept across later
   * errors stays valid and reads the newest text (checked at the end). */
  const char* kept = ncclGetLastError(NULL);
  static const int cases[][3] = {
      /* maxElts, maxEltSize, slots */
      {0, 8, 0},
      {3, 0, 0},
      {1, 1, 1},
      {1, 8, 1},
      {1, 9, 2},
      {7, 24, 21},
      {100, 16, 200},
      {32, 4, 32},
      {INT_MAX, 8, INT_MAX},
      {1, INT_MAX, 268435456},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
    const int got = ncclLLA2ACalcSlots(cases[k][0], cases[k][1]);
    EXPECT(got == cases[k][2], "ncclLLA2ACalcSlots(%d, %d) = %d, expected %d", cases[k][0],
           cases[k][1], got, cases[k][2]);
  }
  EXPECT(pncclLLA2ACalcSlots(5, 17) == 15, "pncclLLA2ACalcSlots(5, 17) = %d",
         pncclLLA2ACalcSlots(5, 17));
  EXPECT(strcmp(ncclGetLastError(NULL), "ncclGetVersion: version is NULL") == 0,
         "a count changed the last error: %s", ncclGetLastError(NULL));

  EXPECT(ncclLLA2ACalcSlots(-1, 8) == -1, "a negative maxElts");
  EXPECT(strcmp(ncclGetLastError(NULL), "ncclLLA2ACalcSlots: maxElts -1 is negative") == 0, "%s",
         ncclGetLastError(NULL));
  EXPECT(ncclLLA2ACalcSlots(4, -2) == -1, "a negative maxEltSize");
  EXPECT(strcmp(ncclGetLastError(NULL), "ncclLLA2ACalcSlots: maxEltSize -2 is negative") == 0, "%s",
         ncclGetLastError(NULL));
  EXPECT(ncclLLA2ACalcSlots(1 << 20, 1 << 14) == -1, "2^31 slots fit an int");
  EXPECT(strcmp(ncclGetLastError(NULL),
                "ncclLLA2ACalcSlots: maxElts 1048576 elements of 16384 bytes need 2147483648 "
                "slots, more than an int holds") == 0,
         "%s", ncclGetLastError(NULL));
  EXPECT(kept == ncclGetLastError(NULL) && strcmp(kept, ncclGetLastError(NULL)) == 0,
         "ncclGetLastError moved: a pointer it returned before no longer reads the last error");
}

/* Both outputs filled with a pattern; `same` tells whether a call left them so. */
typedef struct {
  ncclLLA2AHandle_t ll;
  ncclGinOutboxHandle outbox;
  ncclGinInboxA2AHandle inbox;
  ncclDevResourceRequirements_t req;
} Outputs;

static void fill(Outputs* o) { memset(o, 0xab, sizeof *o); }

static int same(const Outputs* o) {
  Outputs pattern;
  fill(&pattern);
  return memcmp(o, &pattern, sizeof *o) == 0;
}

static void ll_requirement(void) {
  Outputs o;
  fill(&o);
  EXPECT_ERROR(ncclLLA2ACreateRequirement(4, ncclLLA2ACalcSlots(32, 8), &o.ll, &o.req),
               ncclInvalidUsage,
               "ncclLLA2ACreateRequirement: LL all-to-all buffers live in a device communicator, "
               "and RCCLX provides none (ncclCommQueryProperties reports deviceApiSupport = 0");
  EXPECT_ERROR(pncclLLA2ACreateRequirement(0, 0, &o.ll, &o.req), ncclInvalidUsage,
               "ncclLLA2ACreateRequirement: LL all-to-all buffers live");
  EXPECT(same(&o), "a refusal wrote its outputs");
  EXPECT_ERROR(ncclLLA2ACreateRequirement(-1, 32, &o.ll, &o.req), ncclInvalidArgument,
               "ncclLLA2ACreateRequirement: nBlocks -1 is negative");
  /* -1 is what ncclLLA2ACalcSlots returns for arguments it cannot count. */
  EXPECT_ERROR(ncclLLA2ACreateRequirement(4, ncclLLA2ACalcSlots(-5, 8), &o.ll, &o.req),
               ncclInvalidArgument, "ncclLLA2ACreateRequirement: nSlots -1 is negative");
  EXPECT_ERROR(ncclLLA2ACreateRequirement(4, 32, NULL, &o.req), ncclInvalidArgument,
               "ncclLLA2ACreateRequirement: outHandle is NULL");
  EXPECT_ERROR(ncclLLA2ACreateRequirement(4, 32, &o.ll, NULL), ncclInvalidArgument,
               "ncclLLA2ACreateRequirement: outReq is NULL");
  EXPECT(same(&o), "a failed call wrote its outputs");
}

static void gin_requirements(void) {
  Outputs o;
  fill(&o);
  ncclTeam_t peers = {4, 1, 1};
  EXPECT_ERROR(ncclGinOutboxCreateRequirement(8, 12, &o.outbox, &o.req), ncclInvalidUsage,
               "ncclGinOutboxCreateRequirement: GIN outboxes stage a device communicator's puts: "
               "RCCLX has no GIN back-end (ncclCommQueryProperties reports ginType "
               "NCCL_GIN_TYPE_NONE)");
  EXPECT_ERROR(pncclGinOutboxCreateRequirement(0, 0, &o.outbox, &o.req), ncclInvalidUsage,
               "ncclGinOutboxCreateRequirement: GIN outboxes");
  EXPECT_ERROR(ncclGinInboxA2ACreateRequirement(peers, 8, 12, &o.inbox, &o.req), ncclInvalidUsage,
               "ncclGinInboxA2ACreateRequirement: GIN all-to-all inboxes receive a device "
               "communicator's puts: RCCLX has no GIN back-end");
  EXPECT_ERROR(pncclGinInboxA2ACreateRequirement(peers, 1, 7, &o.inbox, &o.req), ncclInvalidUsage,
               "and provides no device communicators");
  EXPECT(same(&o), "a refusal wrote its outputs");

  EXPECT_ERROR(ncclGinOutboxCreateRequirement(-3, 12, &o.outbox, &o.req), ncclInvalidArgument,
               "ncclGinOutboxCreateRequirement: nBlocks -3 is negative");
  EXPECT_ERROR(ncclGinOutboxCreateRequirement(8, 12, NULL, &o.req), ncclInvalidArgument,
               "ncclGinOutboxCreateRequirement: outHandle is NULL");
  EXPECT_ERROR(ncclGinInboxA2ACreateRequirement(peers, -4, 12, &o.inbox, &o.req),
               ncclInvalidArgument, "ncclGinInboxA2ACreateRequirement: nBlocks -4 is negative");
  EXPECT_ERROR(ncclGinInboxA2ACreateRequirement(peers, 8, 12, &o.inbox, NULL), ncclInvalidArgument,
               "ncclGinInboxA2ACreateRequirement: outReq is NULL");
  EXPECT(same(&o), "a failed call wrote its outputs");
}

/* Refusals numbered -101, -102, -103 by nBlocks; the test expects only -102 in the log. */
static void debug_reset(void) {
  ncclGinOutboxHandle outbox;
  ncclDevResourceRequirements_t req;
  EXPECT_ERROR(ncclGinOutboxCreateRequirement(-101, 12, &outbox, &req), ncclInvalidArgument,
               "nBlocks -101");
  setenv("RCCLX_DEBUG", "WARN", 1);
  ncclResetDebugInitInternal();
  EXPECT_ERROR(ncclGinOutboxCreateRequirement(-102, 12, &outbox, &req), ncclInvalidArgument,
               "nBlocks -102");
  setenv("RCCLX_DEBUG", "NONE", 1);
  pncclResetDebugInitInternal();
  EXPECT_ERROR(ncclGinOutboxCreateRequirement(-103, 12, &outbox, &req), ncclInvalidArgument,
               "nBlocks -103");
}

int main(int argc, char** argv) {
  int rank = 0, nranks = 0;
  test_init_args(argc, argv, &rank, &nranks);
  calc_slots();
  ll_requirement();
  gin_requirements();
  debug_reset();
  printf("rank %d: %s (%d failures)\n", rank, g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
