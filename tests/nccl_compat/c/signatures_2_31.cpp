// The signature of every function NCCL 2.31.2's nccl.h and nccl_device.h declare for the host
// (and of its pnccl* alias where NCCL declares one): a declaration of ours that differs in any
// parameter or result type fails the compilation, naming the function (kAbi_<function>). Compiled
// by test_abi.py as C++17, without CUDA (cudaStream_t is then the runtime's CUstream_st*) and,
// where nvcc is present, with it.
#include <nccl.h>
#include <nccl_device.h>

// A function pointer of the exact type is initialised from the name: it picks the host
// overload where nvcc also sees a device function of that name, and no pointer conversion
// exists between other function types.
template <typename T>
using AbiType = T;
#define ABI_SIGNATURE(function, ...) \
  [[maybe_unused]] static constexpr AbiType<__VA_ARGS__> kAbi_##function = &function

ABI_SIGNATURE(ncclAllGather, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                              ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclAllGatherConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclAllReduce, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                              ncclRedOp_t, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclAllReduceConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclAlltoAll, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                             ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclAlltoAllConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclBcast,
              ncclResult_t (*)(void*, unsigned long, ncclDataType_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclBroadcast, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                              int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclBroadcastConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclCommAbort, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(ncclCommCount, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(ncclCommCuDevice, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(ncclCommDeregister, ncclResult_t (*)(ncclComm*, void*));
ABI_SIGNATURE(ncclCommDestroy, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(ncclCommFinalize, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(ncclCommGetAsyncError, ncclResult_t (*)(ncclComm*, ncclResult_t*));
ABI_SIGNATURE(ncclCommGetUniqueId, ncclResult_t (*)(ncclComm*, ncclUniqueId*));
ABI_SIGNATURE(ncclCommGrow, ncclResult_t (*)(ncclComm*, int, ncclUniqueId const*, int, ncclComm**,
                                             ncclConfig_v23100*));
ABI_SIGNATURE(ncclCommInitAll, ncclResult_t (*)(ncclComm**, int, int const*));
ABI_SIGNATURE(ncclCommInitRank, ncclResult_t (*)(ncclComm**, int, ncclUniqueId, int));
ABI_SIGNATURE(ncclCommInitRankConfig,
              ncclResult_t (*)(ncclComm**, int, ncclUniqueId, int, ncclConfig_v23100*));
ABI_SIGNATURE(ncclCommInitRankScalable,
              ncclResult_t (*)(ncclComm**, int, int, int, ncclUniqueId*, ncclConfig_v23100*));
ABI_SIGNATURE(ncclCommMemStats, ncclResult_t (*)(ncclComm*, ncclCommMemStat_t, unsigned long*));
ABI_SIGNATURE(ncclCommQueryProperties, ncclResult_t (*)(ncclComm*, ncclCommProperties*));
ABI_SIGNATURE(ncclCommRegister, ncclResult_t (*)(ncclComm*, void*, unsigned long, void**));
ABI_SIGNATURE(ncclCommResume, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(ncclCommRevoke, ncclResult_t (*)(ncclComm*, int));
ABI_SIGNATURE(ncclCommShrink,
              ncclResult_t (*)(ncclComm*, int*, int, ncclComm**, ncclConfig_v23100*, int));
ABI_SIGNATURE(ncclCommSplit, ncclResult_t (*)(ncclComm*, int, int, ncclComm**, ncclConfig_v23100*));
ABI_SIGNATURE(ncclCommSuspend, ncclResult_t (*)(ncclComm*, int));
ABI_SIGNATURE(ncclCommUserRank, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(ncclCommWindowDeregister, ncclResult_t (*)(ncclComm*, ncclWindow_vidmem*));
ABI_SIGNATURE(ncclCommWindowRegister,
              ncclResult_t (*)(ncclComm*, void*, unsigned long, ncclWindow_vidmem**, int));
ABI_SIGNATURE(ncclDevCommCreate,
              ncclResult_t (*)(ncclComm*, ncclDevCommRequirements const*, ncclDevComm*));
ABI_SIGNATURE(ncclDevCommDestroy, ncclResult_t (*)(ncclComm*, ncclDevComm const*));
ABI_SIGNATURE(ncclGather, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int,
                                           ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclGatherConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclGetCftDeviceLeInfo, ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, int,
                                                       ncclTeam, unsigned int*, unsigned long*));
ABI_SIGNATURE(ncclGetErrorString, char const* (*)(ncclResult_t));
ABI_SIGNATURE(ncclGetLastError, char const* (*)(ncclComm*));
ABI_SIGNATURE(ncclGetLsaDevicePointer,
              ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, int, void**));
ABI_SIGNATURE(ncclGetLsaMultimemDevicePointer,
              ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, void**));
ABI_SIGNATURE(ncclGetMultimemDeviceLeInfo,
              ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, unsigned int*, unsigned long*));
ABI_SIGNATURE(ncclGetMultimemDevicePointer,
              ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, ncclMultimemHandle, void**));
ABI_SIGNATURE(ncclGetPeerDeviceLeInfo, ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, int,
                                                        unsigned int*, unsigned long*));
ABI_SIGNATURE(ncclGetPeerDevicePointer,
              ncclResult_t (*)(ncclWindow_vidmem*, unsigned long, int, void**));
ABI_SIGNATURE(ncclGetUniqueId, ncclResult_t (*)(ncclUniqueId*));
ABI_SIGNATURE(ncclGetVersion, ncclResult_t (*)(int*));
ABI_SIGNATURE(ncclGinBarrierCreateRequirement,
              ncclResult_t (*)(ncclComm*, ncclTeam, int, ncclGinBarrierHandle*,
                               ncclDevResourceRequirements*));
ABI_SIGNATURE(ncclGroupEnd, ncclResult_t (*)());
ABI_SIGNATURE(ncclGroupSimulateEnd, ncclResult_t (*)(ncclSimInfo_v22200*));
ABI_SIGNATURE(ncclGroupStart, ncclResult_t (*)());
ABI_SIGNATURE(ncclLLA2ACalcSlots, int (*)(int, int));
ABI_SIGNATURE(ncclLLA2ACreateRequirement,
              ncclResult_t (*)(int, int, ncclLLA2AHandle*, ncclDevResourceRequirements*));
ABI_SIGNATURE(ncclLsaBarrierCreateRequirement,
              ncclResult_t (*)(ncclTeam, int, ncclLsaBarrierHandle*, ncclDevResourceRequirements*));
ABI_SIGNATURE(ncclMemAlloc, ncclResult_t (*)(void**, unsigned long));
ABI_SIGNATURE(ncclMemFree, ncclResult_t (*)(void*));
ABI_SIGNATURE(ncclParamBind, ncclResult_t (*)(ncclParamHandle**, char const*));
ABI_SIGNATURE(ncclParamDumpAll, void (*)());
ABI_SIGNATURE(ncclParamGet, ncclResult_t (*)(ncclParamHandle*, void*, int, int*));
ABI_SIGNATURE(ncclParamGetAllParameterKeys, ncclResult_t (*)(char const***, int*));
ABI_SIGNATURE(ncclParamGetI16, ncclResult_t (*)(ncclParamHandle*, short*));
ABI_SIGNATURE(ncclParamGetI32, ncclResult_t (*)(ncclParamHandle*, int*));
ABI_SIGNATURE(ncclParamGetI64, ncclResult_t (*)(ncclParamHandle*, long*));
ABI_SIGNATURE(ncclParamGetI8, ncclResult_t (*)(ncclParamHandle*, signed char*));
ABI_SIGNATURE(ncclParamGetParameter, ncclResult_t (*)(char const*, char const**, int*));
ABI_SIGNATURE(ncclParamGetStr, ncclResult_t (*)(ncclParamHandle*, char const**));
ABI_SIGNATURE(ncclParamGetU16, ncclResult_t (*)(ncclParamHandle*, unsigned short*));
ABI_SIGNATURE(ncclParamGetU32, ncclResult_t (*)(ncclParamHandle*, unsigned int*));
ABI_SIGNATURE(ncclParamGetU64, ncclResult_t (*)(ncclParamHandle*, unsigned long*));
ABI_SIGNATURE(ncclParamGetU8, ncclResult_t (*)(ncclParamHandle*, unsigned char*));
ABI_SIGNATURE(ncclPutSignal,
              ncclResult_t (*)(void const*, unsigned long, ncclDataType_t, int, ncclWindow_vidmem*,
                               unsigned long, int, int, unsigned int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclRecv,
              ncclResult_t (*)(void*, unsigned long, ncclDataType_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclRedOpCreatePreMulSum, ncclResult_t (*)(ncclRedOp_t*, void*, ncclDataType_t,
                                                         ncclScalarResidence_t, ncclComm*));
ABI_SIGNATURE(ncclRedOpDestroy, ncclResult_t (*)(ncclRedOp_t, ncclComm*));
ABI_SIGNATURE(ncclReduce, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                           ncclRedOp_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclReduceConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t, int,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclReduceScatter, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                                  ncclRedOp_t, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclReduceScatterConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclScatter, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int,
                                            ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclScatterConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(ncclSend, ncclResult_t (*)(void const*, unsigned long, ncclDataType_t, int, ncclComm*,
                                         CUstream_st*));
ABI_SIGNATURE(ncclSignal, ncclResult_t (*)(int, int, int, unsigned int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclTeamCft, ncclTeam (*)(ncclComm*, ncclCftTeamMode_t));
ABI_SIGNATURE(ncclTeamCftMultimem, ncclTeam (*)(ncclComm*));
ABI_SIGNATURE(ncclTeamLsa, ncclTeam (*)(ncclComm*));
ABI_SIGNATURE(ncclTeamRail, ncclTeam (*)(ncclComm*));
ABI_SIGNATURE(ncclTeamRankToLsa, int (*)(ncclComm*, ncclTeam, int));
ABI_SIGNATURE(ncclTeamRankToWorld, int (*)(ncclComm*, ncclTeam, int));
ABI_SIGNATURE(ncclTeamWorld, ncclTeam (*)(ncclComm*));
ABI_SIGNATURE(ncclWaitSignal,
              ncclResult_t (*)(int, ncclWaitSignalDesc_t*, ncclComm*, CUstream_st*));
ABI_SIGNATURE(ncclWinGetUserPtr, ncclResult_t (*)(ncclComm*, ncclWindow_vidmem*, void**));
ABI_SIGNATURE(pncclAllGather, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                               ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclAllGatherConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclAllReduce, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                               ncclRedOp_t, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclAllReduceConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclAlltoAll, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                              ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclAlltoAllConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclBcast,
              ncclResult_t (*)(void*, unsigned long, ncclDataType_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclBroadcast, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                               int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclBroadcastConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclCommAbort, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(pncclCommCount, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(pncclCommCuDevice, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(pncclCommDeregister, ncclResult_t (*)(ncclComm*, void*));
ABI_SIGNATURE(pncclCommDestroy, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(pncclCommFinalize, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(pncclCommGetAsyncError, ncclResult_t (*)(ncclComm*, ncclResult_t*));
ABI_SIGNATURE(pncclCommGetUniqueId, ncclResult_t (*)(ncclComm*, ncclUniqueId*));
ABI_SIGNATURE(pncclCommGrow, ncclResult_t (*)(ncclComm*, int, ncclUniqueId const*, int, ncclComm**,
                                              ncclConfig_v23100*));
ABI_SIGNATURE(pncclCommInitAll, ncclResult_t (*)(ncclComm**, int, int const*));
ABI_SIGNATURE(pncclCommInitRank, ncclResult_t (*)(ncclComm**, int, ncclUniqueId, int));
ABI_SIGNATURE(pncclCommInitRankConfig,
              ncclResult_t (*)(ncclComm**, int, ncclUniqueId, int, ncclConfig_v23100*));
ABI_SIGNATURE(pncclCommInitRankScalable,
              ncclResult_t (*)(ncclComm**, int, int, int, ncclUniqueId*, ncclConfig_v23100*));
ABI_SIGNATURE(pncclCommMemStats, ncclResult_t (*)(ncclComm*, ncclCommMemStat_t, unsigned long*));
ABI_SIGNATURE(pncclCommRegister, ncclResult_t (*)(ncclComm*, void*, unsigned long, void**));
ABI_SIGNATURE(pncclCommResume, ncclResult_t (*)(ncclComm*));
ABI_SIGNATURE(pncclCommRevoke, ncclResult_t (*)(ncclComm*, int));
ABI_SIGNATURE(pncclCommShrink,
              ncclResult_t (*)(ncclComm*, int*, int, ncclComm**, ncclConfig_v23100*, int));
ABI_SIGNATURE(pncclCommSplit,
              ncclResult_t (*)(ncclComm*, int, int, ncclComm**, ncclConfig_v23100*));
ABI_SIGNATURE(pncclCommSuspend, ncclResult_t (*)(ncclComm*, int));
ABI_SIGNATURE(pncclCommUserRank, ncclResult_t (*)(ncclComm*, int*));
ABI_SIGNATURE(pncclCommWindowDeregister, ncclResult_t (*)(ncclComm*, ncclWindow_vidmem*));
ABI_SIGNATURE(pncclCommWindowRegister,
              ncclResult_t (*)(ncclComm*, void*, unsigned long, ncclWindow_vidmem**, int));
ABI_SIGNATURE(pncclGather, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int,
                                            ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclGatherConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclGetErrorString, char const* (*)(ncclResult_t));
ABI_SIGNATURE(pncclGetLastError, char const* (*)(ncclComm*));
ABI_SIGNATURE(pncclGetUniqueId, ncclResult_t (*)(ncclUniqueId*));
ABI_SIGNATURE(pncclGetVersion, ncclResult_t (*)(int*));
ABI_SIGNATURE(pncclGroupEnd, ncclResult_t (*)());
ABI_SIGNATURE(pncclGroupSimulateEnd, ncclResult_t (*)(ncclSimInfo_v22200*));
ABI_SIGNATURE(pncclGroupStart, ncclResult_t (*)());
ABI_SIGNATURE(pncclMemAlloc, ncclResult_t (*)(void**, unsigned long));
ABI_SIGNATURE(pncclMemFree, ncclResult_t (*)(void*));
ABI_SIGNATURE(pncclParamBind, ncclResult_t (*)(ncclParamHandle**, char const*));
ABI_SIGNATURE(pncclParamDumpAll, void (*)());
ABI_SIGNATURE(pncclParamGet, ncclResult_t (*)(ncclParamHandle*, void*, int, int*));
ABI_SIGNATURE(pncclParamGetAllParameterKeys, ncclResult_t (*)(char const***, int*));
ABI_SIGNATURE(pncclParamGetI16, ncclResult_t (*)(ncclParamHandle*, short*));
ABI_SIGNATURE(pncclParamGetI32, ncclResult_t (*)(ncclParamHandle*, int*));
ABI_SIGNATURE(pncclParamGetI64, ncclResult_t (*)(ncclParamHandle*, long*));
ABI_SIGNATURE(pncclParamGetI8, ncclResult_t (*)(ncclParamHandle*, signed char*));
ABI_SIGNATURE(pncclParamGetParameter, ncclResult_t (*)(char const*, char const**, int*));
ABI_SIGNATURE(pncclParamGetStr, ncclResult_t (*)(ncclParamHandle*, char const**));
ABI_SIGNATURE(pncclParamGetU16, ncclResult_t (*)(ncclParamHandle*, unsigned short*));
ABI_SIGNATURE(pncclParamGetU32, ncclResult_t (*)(ncclParamHandle*, unsigned int*));
ABI_SIGNATURE(pncclParamGetU64, ncclResult_t (*)(ncclParamHandle*, unsigned long*));
ABI_SIGNATURE(pncclParamGetU8, ncclResult_t (*)(ncclParamHandle*, unsigned char*));
ABI_SIGNATURE(pncclPutSignal,
              ncclResult_t (*)(void const*, unsigned long, ncclDataType_t, int, ncclWindow_vidmem*,
                               unsigned long, int, int, unsigned int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclRecv,
              ncclResult_t (*)(void*, unsigned long, ncclDataType_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclRedOpCreatePreMulSum, ncclResult_t (*)(ncclRedOp_t*, void*, ncclDataType_t,
                                                          ncclScalarResidence_t, ncclComm*));
ABI_SIGNATURE(pncclRedOpDestroy, ncclResult_t (*)(ncclRedOp_t, ncclComm*));
ABI_SIGNATURE(pncclReduce, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t,
                                            ncclRedOp_t, int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclReduceConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t, int,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclReduceScatter,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t,
                               ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclReduceScatterConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, ncclRedOp_t,
                               ncclComm*, CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclScatter, ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int,
                                             ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclScatterConfig,
              ncclResult_t (*)(void const*, void*, unsigned long, ncclDataType_t, int, ncclComm*,
                               CUstream_st*, ncclCollConfig_v23100 const*));
ABI_SIGNATURE(pncclSend, ncclResult_t (*)(void const*, unsigned long, ncclDataType_t, int,
                                          ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclSignal, ncclResult_t (*)(int, int, int, unsigned int, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclWaitSignal,
              ncclResult_t (*)(int, ncclWaitSignalDesc_t*, ncclComm*, CUstream_st*));
ABI_SIGNATURE(pncclWinGetUserPtr, ncclResult_t (*)(ncclComm*, ncclWindow_vidmem*, void**));
ABI_SIGNATURE(ncclCftBarrierCreateRequirement,
              ncclResult_t (*)(ncclTeam, int, ncclCftBarrierHandle*, ncclDevResourceRequirements*));

int main() { return 0; }
