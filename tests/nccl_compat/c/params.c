/* NCCL 2.31's parameter calls over RCCLX's knobs, in one process (no communicator): binding by
 * full and short name, every typed read with its range check, strings, the raw form, the
 * key-based read, the list of keys, and what an unknown key or a wrong type is. The run sets
 * RCCLX_TIMEOUT_MS=70000, RCCLX_P2P_CHUNK_BYTES=16M, RCCL_LOW_PRECISION_ENABLE=1 and
 * NCCL_DEBUG=WARN. */
#include "nccl_test.h"

int main(int argc, char** argv) {
  g_rank = 0;
  (void)argc;
  (void)argv;
  ncclParamHandle_t timeout = NULL, shortName = NULL, chunk = NULL, lp = NULL, debug = NULL;
  NCCLCHECK(ncclParamBind(&timeout, "RCCLX_TIMEOUT_MS"));
  NCCLCHECK(ncclParamBind(&shortName, "TIMEOUT_MS"));
  EXPECT(timeout != NULL && timeout == shortName, "one handle per parameter");
  int64_t i64 = 0;
  NCCLCHECK(ncclParamGetI64(timeout, &i64));
  EXPECT(i64 == 70000, "RCCLX_TIMEOUT_MS read %lld", (long long)i64);
  uint32_t u32 = 0;
  NCCLCHECK(ncclParamGetU32(timeout, &u32));
  EXPECT(u32 == 70000, "as uint32: %u", u32);
  int16_t i16 = 0;
  EXPECT_ERROR(ncclParamGetI16(timeout, &i16), ncclInvalidArgument, "does not fit a signed 16");
  NCCLCHECK(ncclParamBind(&chunk, "RCCLX_P2P_CHUNK_BYTES"));
  uint64_t u64 = 0;
  NCCLCHECK(ncclParamGetU64(chunk, &u64));
  EXPECT(u64 == 16u << 20, "16M read as %llu bytes", (unsigned long long)u64);
  NCCLCHECK(ncclParamBind(&lp, "RCCL_LOW_PRECISION_ENABLE"));
  uint8_t u8 = 9;
  NCCLCHECK(ncclParamGetU8(lp, &u8));
  EXPECT(u8 == 1, "a boolean as %u", u8);
  NCCLCHECK(ncclParamBind(&debug, "DEBUG")); /* NCCL_DEBUG */
  const char* text = NULL;
  NCCLCHECK(ncclParamGetStr(debug, &text));
  EXPECT(text != NULL && strcmp(text, "WARN") == 0, "NCCL_DEBUG read '%s'", text);
  int32_t i32 = 0;
  EXPECT_ERROR(ncclParamGetI32(debug, &i32), ncclInvalidArgument, "is a string");
  char raw[16];
  int len = -1;
  NCCLCHECK(ncclParamGet(timeout, raw, sizeof raw, &len));
  memcpy(&i64, raw, sizeof i64);
  EXPECT(len == 8 && i64 == 70000, "raw: %d bytes, %lld", len, (long long)i64);
  NCCLCHECK(ncclParamGet(debug, raw, sizeof raw, &len));
  EXPECT(len == 4 && memcmp(raw, "WARN", 4) == 0, "raw string: %d bytes", len);
  EXPECT_ERROR(ncclParamGet(timeout, raw, 4, &len), ncclInvalidArgument, "maxLen 4");
  int valueLen = 0;
  NCCLCHECK(ncclParamGetParameter("RCCLX_P2P_CHUNK_BYTES", &text, &valueLen));
  EXPECT(strcmp(text, "16M") == 0 && valueLen == 3, "by key: '%s' (%d)", text, valueLen);
  const char** keys = NULL;
  int nkeys = 0;
  NCCLCHECK(ncclParamGetAllParameterKeys(&keys, &nkeys));
  int seen = 0;
  for (int i = 0; i < nkeys; ++i)
    seen += strcmp(keys[i], "RCCLX_ALLREDUCE_ALGO") == 0 || strcmp(keys[i], "NCCL_DEBUG") == 0;
  EXPECT(nkeys > 40 && seen == 2, "%d keys, %d of the two looked for", nkeys, seen);
  ncclParamHandle_t none = NULL;
  EXPECT_ERROR(ncclParamBind(&none, "NO_SUCH_PARAMETER"), ncclInvalidArgument,
               "'NO_SUCH_PARAMETER' names no parameter");
  EXPECT_ERROR(ncclParamGetParameter(NULL, &text, &valueLen), ncclInvalidArgument, "key is NULL");
  ncclParamDumpAll();
  printf("rank 0: %s (%d failures)\n", g_failures ? "FAILED" : "passed", g_failures);
  return g_failures ? 1 : 0;
}
