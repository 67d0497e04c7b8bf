/* NCCL 2.31.2's ABI as numbers: the size and alignment of every type of nccl.h and
 * nccl_device.h that crosses the library boundary or sits in a program's memory, the offset of
 * each of their fields, and the value of every enumerator and numeric macro. A difference from
 * NCCL in our headers fails the compilation, naming the check. Compiled by test_abi.py as C11
 * and C++17 without CUDA (the C++-only types in C++), and run to check the initializers.
 * Usage: abi_2_31 */
#include <limits.h>
#include <nccl.h>
#include <nccl_device.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
#define ABI_CHECK(cond) static_assert(cond, #cond)
#define ABI_ALIGNOF(T) alignof(T)
#else
#define ABI_CHECK(cond) _Static_assert(cond, #cond)
#define ABI_ALIGNOF(T) _Alignof(T)
#endif
#define ABI_SIZE(T, bytes, align) ABI_CHECK(sizeof(T) == (bytes) && ABI_ALIGNOF(T) == (align))
#define ABI_AT(T, field, offset) ABI_CHECK(offsetof(T, field) == (offset))
#define ABI_AT_CXX(T, field, offset) ABI_AT(T, field, offset)
#define ABI_VALUE(name, value) ABI_CHECK((long long)(name) == (value##LL))

/* ---- Types, fields ---- */
ABI_SIZE(ncclUniqueId, 128, 1);
ABI_AT(ncclUniqueId, internal, 0);
ABI_SIZE(ncclConfig_t, 112, 8);
ABI_AT(ncclConfig_t, size, 0);
ABI_AT(ncclConfig_t, magic, 8);
ABI_AT(ncclConfig_t, version, 12);
ABI_AT(ncclConfig_t, blocking, 16);
ABI_AT(ncclConfig_t, cgaClusterSize, 20);
ABI_AT(ncclConfig_t, minCTAs, 24);
ABI_AT(ncclConfig_t, maxCTAs, 28);
ABI_AT(ncclConfig_t, netName, 32);
ABI_AT(ncclConfig_t, splitShare, 40);
ABI_AT(ncclConfig_t, trafficClass, 44);
ABI_AT(ncclConfig_t, commName, 48);
ABI_AT(ncclConfig_t, collnetEnable, 56);
ABI_AT(ncclConfig_t, CTAPolicy, 60);
ABI_AT(ncclConfig_t, shrinkShare, 64);
ABI_AT(ncclConfig_t, nvlsCTAs, 68);
ABI_AT(ncclConfig_t, nChannelsPerNetPeer, 72);
ABI_AT(ncclConfig_t, nvlinkCentricSched, 76);
ABI_AT(ncclConfig_t, graphUsageMode, 80);
ABI_AT(ncclConfig_t, numRmaCtx, 84);
ABI_AT(ncclConfig_t, maxP2pPeers, 88);
ABI_AT(ncclConfig_t, graphStreamOrdering, 92);
ABI_AT(ncclConfig_t, launchOrderImplicit, 96);
ABI_AT(ncclConfig_t, numRmaSig, 100);
ABI_AT(ncclConfig_t, rmaEagerInit, 104);
ABI_AT(ncclConfig_t, hostCftMode, 108);
ABI_SIZE(ncclConfigExt_t, 24, 8);
ABI_AT(ncclConfigExt_t, next, 0);
ABI_AT(ncclConfigExt_t, key, 8);
ABI_AT(ncclConfigExt_t, key.vendorId, 8);
ABI_AT(ncclConfigExt_t, key.optionId, 12);
ABI_AT(ncclConfigExt_t, val, 16);
ABI_AT(ncclConfigExt_t, val.i, 16);
ABI_AT(ncclConfigExt_t, val.s, 16);
ABI_AT(ncclConfigExt_t, val.raw, 16);
ABI_SIZE(ncclCollConfig_t, 64, 8);
ABI_AT(ncclCollConfig_t, size, 0);
ABI_AT(ncclCollConfig_t, magic, 8);
ABI_AT(ncclCollConfig_t, version, 12);
ABI_AT(ncclCollConfig_t, ext, 16);
ABI_AT(ncclCollConfig_t, minCTAs, 24);
ABI_AT(ncclCollConfig_t, maxCTAs, 28);
ABI_AT(ncclCollConfig_t, nvlsCTAs, 32);
ABI_AT(ncclCollConfig_t, cgaClusterSize, 36);
ABI_AT(ncclCollConfig_t, algSelection, 40);
ABI_AT(ncclCollConfig_t, forceAlgSelection, 48);
ABI_AT(ncclCollConfig_t, CTAPolicy, 52);
ABI_AT(ncclCollConfig_t, userProfilerTag, 56);
ABI_SIZE(ncclSimInfo_t, 24, 8);
ABI_AT(ncclSimInfo_t, size, 0);
ABI_AT(ncclSimInfo_t, magic, 8);
ABI_AT(ncclSimInfo_t, version, 12);
ABI_AT(ncclSimInfo_t, estimatedTime, 16);
ABI_SIZE(ncclWaitSignalDesc_t, 16, 4);
ABI_AT(ncclWaitSignalDesc_t, opCnt, 0);
ABI_AT(ncclWaitSignalDesc_t, peer, 4);
ABI_AT(ncclWaitSignalDesc_t, sigIdx, 8);
ABI_AT(ncclWaitSignalDesc_t, ctx, 12);
ABI_SIZE(ncclTeam_t, 12, 4);
ABI_AT(ncclTeam_t, nRanks, 0);
ABI_AT(ncclTeam_t, rank, 4);
ABI_AT(ncclTeam_t, stride, 8);
ABI_SIZE(ncclGinRequest_t, 16, 8);
ABI_AT(ncclGinRequest_t, opaque, 0);
ABI_SIZE(ncclDevCommRequirements_t, 120, 8);
ABI_AT(ncclDevCommRequirements_t, size, 0);
ABI_AT(ncclDevCommRequirements_t, magic, 8);
ABI_AT(ncclDevCommRequirements_t, version, 12);
ABI_AT(ncclDevCommRequirements_t, resourceRequirementsList, 16);
ABI_AT(ncclDevCommRequirements_t, teamRequirementsList, 24);
ABI_AT(ncclDevCommRequirements_t, lsaMultimem, 32);
ABI_AT(ncclDevCommRequirements_t, barrierCount, 36);
ABI_AT(ncclDevCommRequirements_t, lsaBarrierCount, 40);
ABI_AT(ncclDevCommRequirements_t, railGinBarrierCount, 44);
ABI_AT(ncclDevCommRequirements_t, lsaLLA2ABlockCount, 48);
ABI_AT(ncclDevCommRequirements_t, lsaLLA2ASlotCount, 52);
ABI_AT(ncclDevCommRequirements_t, ginForceEnable, 56);
ABI_AT(ncclDevCommRequirements_t, ginContextCount, 60);
ABI_AT(ncclDevCommRequirements_t, ginSignalCount, 64);
ABI_AT(ncclDevCommRequirements_t, ginCounterCount, 68);
ABI_AT(ncclDevCommRequirements_t, ginConnectionType, 72);
ABI_AT(ncclDevCommRequirements_t, ginExclusiveContexts, 76);
ABI_AT(ncclDevCommRequirements_t, ginQueueDepth, 80);
ABI_AT(ncclDevCommRequirements_t, ginTrafficClass, 84);
ABI_AT(ncclDevCommRequirements_t, worldGinBarrierCount, 88);
ABI_AT(ncclDevCommRequirements_t, ginStrongSignalsRequired, 92);
ABI_AT(ncclDevCommRequirements_t, ginVaSignalsRequired, 93);
ABI_AT(ncclDevCommRequirements_t, ginCustomStride, 96);
ABI_AT(ncclDevCommRequirements_t, ginType, 100);
ABI_AT(ncclDevCommRequirements_t, useRuntimeVersion, 104);
ABI_AT(ncclDevCommRequirements_t, cftCaps, 108);
ABI_AT(ncclDevCommRequirements_t, cftBarrierCount, 112);
ABI_SIZE(ncclDevResourceRequirements_t, 56, 8);
ABI_AT(ncclDevResourceRequirements_t, next, 0);
ABI_AT(ncclDevResourceRequirements_t, bufferSize, 8);
ABI_AT(ncclDevResourceRequirements_t, bufferAlign, 16);
ABI_AT(ncclDevResourceRequirements_t, outBufferHandle, 24);
ABI_AT(ncclDevResourceRequirements_t, ginSignalCount, 32);
ABI_AT(ncclDevResourceRequirements_t, ginCounterCount, 36);
ABI_AT(ncclDevResourceRequirements_t, outGinSignalStart, 40);
ABI_AT(ncclDevResourceRequirements_t, outGinCounterStart, 48);
ABI_SIZE(ncclTeamRequirements_t, 32, 8);
ABI_AT(ncclTeamRequirements_t, next, 0);
ABI_AT(ncclTeamRequirements_t, team, 8);
ABI_AT(ncclTeamRequirements_t, multimem, 20);
ABI_AT(ncclTeamRequirements_t, outMultimemHandle, 24);
ABI_SIZE(ncclCommProperties_t, 144, 8);
ABI_AT(ncclCommProperties_t, size, 0);
ABI_AT(ncclCommProperties_t, magic, 8);
ABI_AT(ncclCommProperties_t, version, 12);
ABI_AT(ncclCommProperties_t, rank, 16);
ABI_AT(ncclCommProperties_t, nRanks, 20);
ABI_AT(ncclCommProperties_t, cudaDev, 24);
ABI_AT(ncclCommProperties_t, nvmlDev, 28);
ABI_AT(ncclCommProperties_t, deviceApiSupport, 32);
ABI_AT(ncclCommProperties_t, multimemSupport, 33);
ABI_AT(ncclCommProperties_t, ginType, 36);
ABI_AT(ncclCommProperties_t, nLsaTeams, 40);
ABI_AT(ncclCommProperties_t, hostRmaSupport, 44);
ABI_AT(ncclCommProperties_t, railedGinType, 48);
ABI_AT(ncclCommProperties_t, commHash, 56);
ABI_AT(ncclCommProperties_t, ginMinStride, 64);
ABI_AT(ncclCommProperties_t, ginConnectionType, 68);
ABI_AT(ncclCommProperties_t, ginSupport, 72);
ABI_AT(ncclCommProperties_t, devCommRuntimeVersionSize, 136);
ABI_SIZE(ncclDevComm_t, 248, 8);
ABI_AT(ncclDevComm_t, magic, 0);
ABI_AT(ncclDevComm_t, version, 4);
ABI_AT(ncclDevComm_t, rank, 8);
ABI_AT(ncclDevComm_t, nRanks, 12);
ABI_AT(ncclDevComm_t, nRanks_rcp32, 16);
ABI_AT(ncclDevComm_t, lsaRank, 20);
ABI_AT(ncclDevComm_t, lsaSize, 24);
ABI_AT(ncclDevComm_t, lsaSize_rcp32, 28);
ABI_AT(ncclDevComm_t, windowTable, 32);
ABI_AT(ncclDevComm_t, resourceWindow, 40);
ABI_AT(ncclDevComm_t, resourceWindow_inlined, 48);
ABI_AT(ncclDevComm_t, hybridDenseGinBarrier, 64);
ABI_AT(ncclDevComm_t, lsaMultimem, 72);
ABI_AT(ncclDevComm_t, lsaBarrier, 80);
ABI_AT(ncclDevComm_t, railGinBarrier, 88);
ABI_AT(ncclDevComm_t, ginConnectionCount, 96);
ABI_AT(ncclDevComm_t, backendIndex, 97);
ABI_AT(ncclDevComm_t, ginNetDeviceTypes, 98);
ABI_AT(ncclDevComm_t, ginHandles, 104);
ABI_AT(ncclDevComm_t, ginSignalCount, 136);
ABI_AT(ncclDevComm_t, ginCounterCount, 140);
ABI_AT(ncclDevComm_t, ginSignalShadows, 144);
ABI_AT(ncclDevComm_t, ginContextCount, 152);
ABI_AT(ncclDevComm_t, ginConnectionStride, 156);
ABI_AT(ncclDevComm_t, ginContextStride, 160);
ABI_AT(ncclDevComm_t, ginStrongLegacySignals, 164);
ABI_AT(ncclDevComm_t, abortFlag, 168);
ABI_AT(ncclDevComm_t, hybridLsaBarrier, 176);
ABI_AT(ncclDevComm_t, hybridRailGinBarrier, 184);
ABI_AT(ncclDevComm_t, worldGinBarrier, 192);
ABI_AT(ncclDevComm_t, ginConnectionStride_rcp32, 200);
ABI_AT(ncclDevComm_t, cftRank, 204);
ABI_AT(ncclDevComm_t, cftSize, 208);
ABI_AT(ncclDevComm_t, cftMultimemRank, 212);
ABI_AT(ncclDevComm_t, cftMultimemSize, 216);
ABI_AT(ncclDevComm_t, cftMultimemSize_rcp32, 220);
ABI_AT(ncclDevComm_t, ucLeId, 224);
ABI_AT(ncclDevComm_t, mcLeId, 228);
ABI_AT(ncclDevComm_t, cftBarrier, 232);
ABI_AT(ncclDevComm_t, cftMultimemBarrier, 240);
ABI_SIZE(ncclResourceWindow_vidmem_t, 16, 8);
ABI_AT(ncclResourceWindow_vidmem_t, lsaFlatBase, 0);
ABI_AT(ncclResourceWindow_vidmem_t, stride4G, 8);
ABI_AT(ncclResourceWindow_vidmem_t, mcOffset4K, 12);
ABI_SIZE(ncclMultimemHandle_t, 8, 8);
ABI_AT(ncclMultimemHandle_t, mcBasePtr, 0);
ABI_SIZE(ncclLsaBarrierHandle_t, 8, 4);
ABI_AT(ncclLsaBarrierHandle_t, bufHandle, 0);
ABI_AT(ncclLsaBarrierHandle_t, nBarriers, 4);
ABI_SIZE(ncclGinBarrierHandle_t, 8, 4);
ABI_AT(ncclGinBarrierHandle_t, signal0, 0);
ABI_AT(ncclGinBarrierHandle_t, unused, 4);
ABI_SIZE(ncclCftBarrierHandle_t, 8, 4);
ABI_AT(ncclCftBarrierHandle_t, bufHandle, 0);
ABI_AT(ncclCftBarrierHandle_t, nBarriers, 4);
ABI_SIZE(ncclLLA2AHandle_t, 8, 4);
ABI_AT(ncclLLA2AHandle_t, bufHandle, 0);
ABI_AT(ncclLLA2AHandle_t, nSlots, 4);
ABI_SIZE(ncclNetDeviceHandle_t, 32, 8);
ABI_AT(ncclNetDeviceHandle_t, netDeviceType, 0);
ABI_AT(ncclNetDeviceHandle_t, netDeviceVersion, 4);
ABI_AT(ncclNetDeviceHandle_t, handle, 8);
ABI_AT(ncclNetDeviceHandle_t, size, 16);
ABI_AT(ncclNetDeviceHandle_t, needsProxyProgress, 24);
ABI_SIZE(ncclResult_t, 4, 4);
ABI_SIZE(ncclDataType_t, 4, 4);
ABI_SIZE(ncclRedOp_t, 4, 4);
ABI_SIZE(ncclHostCftMode_t, 4, 4);
ABI_SIZE(ncclCommMemStat_t, 4, 4);
ABI_SIZE(ncclScalarResidence_t, 4, 4);
ABI_SIZE(ncclGinType_t, 4, 4);
ABI_SIZE(ncclGinConnectionType_t, 4, 4);
ABI_SIZE(ncclCftTeamMode_t, 4, 4);
ABI_SIZE(ncclCftCap_t, 4, 4);
ABI_SIZE(ncclNetDeviceType, 4, 4);
ABI_SIZE(ncclDevResourceHandle_t, 4, 4);
ABI_SIZE(ncclGinSignal_t, 4, 4);
ABI_SIZE(ncclGinCounter_t, 4, 4);
ABI_SIZE(ncclCftLeId_t, 4, 4);
ABI_SIZE(ncclGinSignalOp_t, 4, 4);

#ifdef __cplusplus
ABI_SIZE(ncclDevCommWindowTable, 776, 8);
ABI_AT_CXX(ncclDevCommWindowTable, entries, 0);
ABI_AT_CXX(ncclDevCommWindowTable, next, 768);
ABI_SIZE(ncclDevCommWindowTable::Entry, 24, 8);
ABI_AT_CXX(ncclDevCommWindowTable::Entry, base, 0);
ABI_AT_CXX(ncclDevCommWindowTable::Entry, size, 8);
ABI_AT_CXX(ncclDevCommWindowTable::Entry, window, 16);
ABI_SIZE(ncclSymPtr<float>, 16, 8);
ABI_AT_CXX(ncclSymPtr<float>, window, 0);
ABI_AT_CXX(ncclSymPtr<float>, offset, 8);
ABI_SIZE(ncclCftSmem, 16, 16);
ABI_AT_CXX(ncclCftSmem, bar, 0);
#endif

/* ---- Enumerators and macros ---- */
ABI_VALUE(ncclSuccess, 0);
ABI_VALUE(ncclUnhandledCudaError, 1);
ABI_VALUE(ncclSystemError, 2);
ABI_VALUE(ncclInternalError, 3);
ABI_VALUE(ncclInvalidArgument, 4);
ABI_VALUE(ncclInvalidUsage, 5);
ABI_VALUE(ncclRemoteError, 6);
ABI_VALUE(ncclInProgress, 7);
ABI_VALUE(ncclTimeout, 8);
ABI_VALUE(ncclNumResults, 9);
ABI_VALUE(ncclHostCftDefault, -2147483648);
ABI_VALUE(ncclHostCftEnable, 1);
ABI_VALUE(ncclHostCftDisable, 2);
ABI_VALUE(ncclHostCftFallback, 3);
ABI_VALUE(ncclStatGpuMemSuspend, 0);
ABI_VALUE(ncclStatGpuMemSuspended, 1);
ABI_VALUE(ncclStatGpuMemPersist, 2);
ABI_VALUE(ncclStatGpuMemTotal, 3);
ABI_VALUE(ncclNumOps_dummy, 5);
ABI_VALUE(ncclSum, 0);
ABI_VALUE(ncclProd, 1);
ABI_VALUE(ncclMax, 2);
ABI_VALUE(ncclMin, 3);
ABI_VALUE(ncclAvg, 4);
ABI_VALUE(ncclNumOps, 5);
ABI_VALUE(ncclMaxRedOp, 2147483647);
ABI_VALUE(ncclInt8, 0);
ABI_VALUE(ncclChar, 0);
ABI_VALUE(ncclUint8, 1);
ABI_VALUE(ncclInt32, 2);
ABI_VALUE(ncclInt, 2);
ABI_VALUE(ncclUint32, 3);
ABI_VALUE(ncclInt64, 4);
ABI_VALUE(ncclUint64, 5);
ABI_VALUE(ncclFloat16, 6);
ABI_VALUE(ncclHalf, 6);
ABI_VALUE(ncclFloat32, 7);
ABI_VALUE(ncclFloat, 7);
ABI_VALUE(ncclFloat64, 8);
ABI_VALUE(ncclDouble, 8);
ABI_VALUE(ncclBfloat16, 9);
ABI_VALUE(ncclFloat8e4m3, 10);
ABI_VALUE(ncclFloat8e5m2, 11);
ABI_VALUE(ncclNumTypes, 12);
ABI_VALUE(ncclScalarDevice, 0);
ABI_VALUE(ncclScalarHostImmediate, 1);
ABI_VALUE(NCCL_GIN_CONNECTION_NONE, 0);
ABI_VALUE(NCCL_GIN_CONNECTION_FULL, 1);
ABI_VALUE(NCCL_GIN_CONNECTION_RAIL, 2);
ABI_VALUE(NCCL_GIN_CONNECTION_CUSTOM_STRIDE, 3);
ABI_VALUE(NCCL_GIN_TYPE_NONE, 0);
ABI_VALUE(NCCL_GIN_TYPE_PROXY, 2);
ABI_VALUE(NCCL_GIN_TYPE_GDAKI, 3);
ABI_VALUE(NCCL_GIN_TYPE_GPI, 4);
ABI_VALUE(NCCL_GIN_TYPE_EFA_GDA, 5);
ABI_VALUE(NCCL_GIN_MAX_TYPES, 6);
ABI_VALUE(NCCL_CFT_TEAM_FLAT, 0);
ABI_VALUE(NCCL_CFT_TEAM_HIER_MULTIMEM, 1);
ABI_VALUE(NCCL_CFT_TEAM_HIER_LSA, 2);
ABI_VALUE(NCCL_CFT_NONE, 0);
ABI_VALUE(NCCL_CFT, 1);
ABI_VALUE(NCCL_CFT_MULTIMEM, 2);
ABI_VALUE(NCCL_NET_DEVICE_HOST, 0);
ABI_VALUE(NCCL_NET_DEVICE_UNPACK, 1);
ABI_VALUE(NCCL_NET_DEVICE_GIN_PROXY, 2);
ABI_VALUE(NCCL_NET_DEVICE_GIN_GDAKI, 3);
ABI_VALUE(NCCL_NET_DEVICE_GIN_GPI, 4);
ABI_VALUE(NCCL_NET_DEVICE_GIN_EFA_GDA, 5);
ABI_VALUE(ncclGinOptFlagsDefault, 0);
ABI_VALUE(ncclGinOptFlagsMaySkipCreditCheck, 1);
ABI_VALUE(ncclGinOptFlagsAggregateRequests, 2);
ABI_VALUE(ncclGinSignalInc, 0);
ABI_VALUE(ncclGinSignalAdd, 1);
ABI_VALUE(NCCL_MAJOR, 2);
ABI_VALUE(NCCL_MINOR, 31);
ABI_VALUE(NCCL_PATCH, 2);
ABI_VALUE(NCCL_VERSION_CODE, 23102);
ABI_VALUE(NCCL_UNIQUE_ID_BYTES, 128);
ABI_VALUE(NCCL_CONFIG_UNDEF_INT, -2147483648);
ABI_VALUE(NCCL_SPLIT_NOCOLOR, -1);
ABI_VALUE(NCCL_API_MAGIC, 3405692655);
ABI_VALUE(NCCL_WIN_DEFAULT, 0);
ABI_VALUE(NCCL_WIN_COLL_SYMMETRIC, 1);
ABI_VALUE(NCCL_WIN_STRICT_ORDERING, 2);
ABI_VALUE(NCCL_WIN_REQUIRED_ALIGNMENT, 4096);
ABI_VALUE(NCCL_CTA_POLICY_DEFAULT, 0);
ABI_VALUE(NCCL_CTA_POLICY_EFFICIENCY, 1);
ABI_VALUE(NCCL_CTA_POLICY_ZERO, 2);
ABI_VALUE(NCCL_SHRINK_DEFAULT, 0);
ABI_VALUE(NCCL_SHRINK_ABORT, 1);
ABI_VALUE(NCCL_REVOKE_DEFAULT, 0);
ABI_VALUE(NCCL_SUSPEND_MEM, 1);
ABI_VALUE(NCCL_GIN_MAX_CONNECTIONS, 4);
ABI_VALUE(NCCL_GIN_MAX_ACTIVE_BACKENDS, 4);
ABI_VALUE(NCCL_LE_ID_INVALID, 4294967295);
ABI_VALUE(NCCL_CFT_BARRIER_ALIGN, 16);
ABI_VALUE(NCCL_CFT_BARRIER_GRAN, 16);
ABI_VALUE(NCCL_NET_DEVICE_INVALID_VERSION, 0);
ABI_VALUE(NCCL_NET_MTU_SIZE, 4096);
ABI_VALUE(NCCL_NET_DEVICE_UNPACK_VERSION, 7);

ABI_CHECK(NCCL_VERSION(2, 31, 2) == 23102 && NCCL_VERSION(2, 8, 4) == 2804);
ABI_CHECK(NCCL_GIN_BACKEND_MASK_ALL == 0x3c); /* the four GIN back-ends of ncclNetDeviceType */

#define EXPECT(cond)                                 \
  do {                                               \
    if (!(cond)) {                                   \
      printf("abi_2_31: %s: %s\n", "failed", #cond); \
      return 1;                                      \
    }                                                \
  } while (0)

/* The initializers, field by field as NCCL sets them. */
int main(void) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  EXPECT(config.size == 112 && config.magic == 0xcafebeef && config.version == 23102);
  EXPECT(config.blocking == INT_MIN && config.netName == NULL && config.commName == NULL);
  EXPECT(config.nvlinkCentricSched == INT_MIN && config.hostCftMode == ncclHostCftDefault);
  ncclCollConfig_t coll = NCCL_COLLCONFIG_INITIALIZER;
  EXPECT(coll.size == 64 && coll.magic == 0xcafebeef && coll.version == 23102);
  EXPECT(coll.ext == NULL && coll.minCTAs == INT_MIN && coll.maxCTAs == INT_MIN);
  EXPECT(coll.nvlsCTAs == INT_MIN && coll.cgaClusterSize == INT_MIN && coll.algSelection == NULL);
  EXPECT(coll.forceAlgSelection == 1 && coll.CTAPolicy == INT_MIN && coll.userProfilerTag == 0);
  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  EXPECT(sim.size == 24 && sim.magic == 0x74685283 && sim.version == 23102);
  EXPECT(sim.estimatedTime == -1.0f);
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  EXPECT(reqs.size == 120 && reqs.magic == 0xcafebeef && reqs.version == 23102);
  EXPECT(reqs.resourceRequirementsList == NULL && reqs.teamRequirementsList == NULL);
  EXPECT(!reqs.lsaMultimem && reqs.barrierCount == 0 && reqs.lsaBarrierCount == 0);
  EXPECT(reqs.railGinBarrierCount == 0 && reqs.lsaLLA2ABlockCount == 0);
  EXPECT(reqs.lsaLLA2ASlotCount == 0 && !reqs.ginForceEnable && reqs.ginContextCount == 4);
  EXPECT(reqs.ginSignalCount == 0 && reqs.ginCounterCount == 0);
  EXPECT(reqs.ginConnectionType == NCCL_GIN_CONNECTION_NONE && !reqs.ginExclusiveContexts);
  EXPECT(reqs.ginQueueDepth == 0 && reqs.ginTrafficClass == INT_MIN);
  EXPECT(reqs.worldGinBarrierCount == 0 && reqs.ginStrongSignalsRequired);
  EXPECT(reqs.ginVaSignalsRequired && reqs.ginCustomStride == 1);
  EXPECT(reqs.ginType == NCCL_GIN_TYPE_NONE && !reqs.useRuntimeVersion);
  EXPECT(reqs.cftCaps == NCCL_CFT_NONE && reqs.cftBarrierCount == 0);
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  EXPECT(props.size == 144 && props.magic == 0xcafebeef && props.version == 23102);
  /* Every field after the versioned header starts zero. */
  ncclCommProperties_t zero;
  memset(&zero, 0, sizeof zero);
  EXPECT(memcmp((char*)&props + 16, (char*)&zero + 16,
                offsetof(ncclCommProperties_t, ginType) - 16) == 0);
  EXPECT(props.ginType == 0 && props.nLsaTeams == 0 && !props.hostRmaSupport);
  EXPECT(props.railedGinType == 0 && props.commHash == 0 && props.ginMinStride == 0);
  EXPECT(props.ginConnectionType == 0 && !props.ginSupport[0] && !props.ginSupport[63]);
  EXPECT(props.devCommRuntimeVersionSize == 0);
  printf("abi_2_31: initializers match\n");
  return 0;
}
