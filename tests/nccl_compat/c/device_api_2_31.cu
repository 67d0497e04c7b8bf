// Compiled by test_abi.py with nvcc (sm_90, C++17) against our include dir alone: host code and
// kernels using what NCCL 2.31 declares beyond 2.28 (the LL all-to-all session, symmetric
// pointers and the reduce / copy forms taking them, CFT transfers and barriers, GIN contexts
// over chosen back-ends, the C-style GIN calls, one-shot GIN and hybrid barriers, ncclCoopAny
// and ncclCoopBcast, the CFT team calls, the 2.31 result code, flags and config fields) on the
// CUDA half, bfloat16 and fp8 types nccl.h brings, and the layout of the types only CUDA code
// sees (NCCL 2.31.2's numbers). Only compiled, never run: RCCLX makes no device communicator to
// run the kernels on. Kernels named local* use only the parts that work here and must not trap.
#include <nccl.h>
#include <nccl_device.h>

#include <cstddef>

// ---- Layout of the CUDA-only types ----------------------------------------------------------
// offsetof on a type with a reference member (ncclGin, ncclGin_C) is conditionally supported:
// nvcc and the host compiler support it with a warning, silenced here.
#pragma nv_diag_suppress 1427
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
#define ABI_SIZE(T, bytes, align) static_assert(sizeof(T) == (bytes) && alignof(T) == (align), #T)
#define ABI_AT(T, field, offset) static_assert(offsetof(T, field) == (offset), #T "." #field)
ABI_SIZE(ncclCoopAny, 24, 8);
ABI_AT(ncclCoopAny, storage, 0);
ABI_AT(ncclCoopAny, vtable, 16);
ABI_SIZE(ncclCoopLanes, 4, 4);
ABI_AT(ncclCoopLanes, lmask, 0);
ABI_SIZE(ncclCoopWarpSpan, 4, 4);
ABI_SIZE(ncclCoopCta, 1, 1);
ABI_SIZE(ncclCoopWarp, 1, 1);
ABI_SIZE(ncclGinDescriptorSmem, 64, 16);
ABI_SIZE(ncclGin_DescriptorSmem, 8, 8);
ABI_AT(ncclGin_DescriptorSmem, descriptor, 0);
ABI_SIZE(ncclGin, 40, 8);
ABI_AT(ncclGin, contextId, 12);
ABI_AT(ncclGin, resourceSharingMode, 16);
ABI_AT(ncclGin, _ginHandle, 24);
ABI_AT(ncclGin, _signalShadows, 32);
ABI_SIZE(ncclGin_C, 48, 8);
ABI_AT(ncclGin_C, contextId, 12);
ABI_AT(ncclGin_C, resourceSharingMode, 16);
ABI_AT(ncclGin_C, _ginHandle, 24);
ABI_AT(ncclGin_C, _signalShadows, 32);
ABI_AT(ncclGin_C, backendMask, 40);
ABI_SIZE(ncclGin_SignalInc, 4, 4);
ABI_SIZE(ncclGin_StrongSignalInc, 4, 4);
ABI_SIZE(ncclGin_WeakSignalInc, 4, 4);
ABI_SIZE(ncclGin_SignalAdd, 16, 8);
ABI_AT(ncclGin_SignalAdd, value, 8);
ABI_SIZE(ncclGin_StrongSignalAdd, 16, 8);
ABI_AT(ncclGin_StrongSignalAdd, value, 8);
ABI_SIZE(ncclGin_WeakSignalAdd, 16, 8);
ABI_AT(ncclGin_WeakSignalAdd, value, 8);
ABI_SIZE(ncclGin_VASignalInc, 16, 8);
ABI_AT(ncclGin_VASignalInc, signalOffset, 8);
ABI_SIZE(ncclGin_StrongVASignalInc, 16, 8);
ABI_AT(ncclGin_StrongVASignalInc, signalOffset, 8);
ABI_SIZE(ncclGin_WeakVASignalInc, 16, 8);
ABI_AT(ncclGin_WeakVASignalInc, signalOffset, 8);
ABI_SIZE(ncclGin_VASignalAdd, 24, 8);
ABI_AT(ncclGin_VASignalAdd, value, 16);
ABI_SIZE(ncclGin_StrongVASignalAdd, 24, 8);
ABI_AT(ncclGin_StrongVASignalAdd, value, 16);
ABI_SIZE(ncclGin_WeakVASignalAdd, 24, 8);
ABI_AT(ncclGin_WeakVASignalAdd, value, 16);
ABI_SIZE(ncclGin_CounterInc, 4, 4);
ABI_SIZE(ncclGin_WeakCounterInc, 4, 4);
ABI_SIZE(ncclGinFenceLevel, 4, 4);
ABI_SIZE(ncclGinOptFlags, 4, 4);
ABI_SIZE(ncclGinResourceSharingMode, 1, 1);
ABI_SIZE(ncclMemProxyType, 4, 4);
ABI_SIZE(ncclMemFenceScope, 4, 4);
#pragma GCC diagnostic pop
#pragma nv_diag_default 1427
static_assert(ncclGinFenceLevel::None == 0 && ncclGinFenceLevel::Put == 1 &&
                  ncclGinFenceLevel::Get == 2 && ncclGinFenceLevel::Relaxed == 0,
              "ncclGinFenceLevel");
static_assert(NCCL_GIN_RESOURCE_SHARING_GPU == 0 && NCCL_GIN_RESOURCE_SHARING_CTA == 1 &&
                  NCCL_GIN_RESOURCE_SHARING_THREAD == 2,
              "ncclGinResourceSharingMode");
static_assert(static_cast<int>(ncclMemProxyType::Generic) == 1 &&
                  static_cast<int>(ncclMemProxyType::Fabric) == 2 &&
                  static_cast<int>(ncclMemFenceScope::Cta) == 1 &&
                  static_cast<int>(ncclMemFenceScope::Sys) == 2,
              "ncclMemProxyType, ncclMemFenceScope");
static_assert(ncclCftOpElemGran == 4 && ncclCftOpByteGran == 16, "CFT barrier payload");

// ---- Host code --------------------------------------------------------------------------------

// A communicator configured with 2.31's fields.
ncclResult_t initWith231Config(ncclComm_t* comm, ncclUniqueId id, int nranks, int rank) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.hostCftMode = ncclHostCftDisable;
  config.numRmaCtx = 1;
  config.rmaEagerInit = 1;
  return ncclCommInitRankConfig(comm, nranks, id, rank, &config);
}

ncclResult_t registerOrdered(ncclComm_t comm, void* buf, size_t bytes, ncclWindow_t* win) {
  return ncclCommWindowRegister(comm, buf, bytes, win,
                                NCCL_WIN_COLL_SYMMETRIC | NCCL_WIN_STRICT_ORDERING);
}

bool revokedOrTimedOut(ncclComm_t comm) {
  const ncclResult_t r = ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT);
  return r == ncclTimeout || r == ncclSuccess;
}

// The resources a 2.31 program asks for before making a device communicator.
ncclResult_t requirements(ncclComm_t comm, int blocks, ncclDevCommRequirements* reqs,
                          ncclLLA2AHandle* ll, ncclCftBarrierHandle* cft,
                          ncclDevResourceRequirements* res) {
  ncclResult_t r =
      ncclLLA2ACreateRequirement(blocks, ncclLLA2ACalcSlots(256, sizeof(half)), ll, res);
  if (r != ncclSuccess) return r;
  r = ncclCftBarrierCreateRequirement(ncclTeamCft(comm, NCCL_CFT_TEAM_HIER_LSA), blocks, cft,
                                      res + 1);
  reqs->resourceRequirementsList = res;
  reqs->cftCaps = NCCL_CFT | NCCL_CFT_MULTIMEM;
  reqs->cftBarrierCount = blocks;
  return r;
}

ncclNetDeviceHandle_t gdakiHandle = {NCCL_NET_DEVICE_GIN_GDAKI, 0, nullptr, 0, 0};

// Symmetric pointers move by elements, on the host as in kernels.
constexpr ncclSymPtr<double> kOrigin{};
ncclSymPtr<float> advance(ncclSymPtr<float> p) {
  p += 3;
  p -= 1u;
  ncclSymPtr<float> q = p + 4ll;
  q = q - static_cast<unsigned long>(2);
  ncclSymPtr<char> bytes = q;
  if (bytes != ncclSymPtr<char>(q.window, q.offset) || q - p != 2) return kOrigin;
  return q;
}

// The ranks outside a team, and resource buffer offsets, computed on the host.
int outsideRail(ncclComm_t comm, int i) {
  const ncclTeam world = ncclTeamWorld(comm), lsa = ncclTeamLsa(comm);
  return ncclTeamRankInDifference(world, lsa, i) + static_cast<int>(ncclGetResourceBufferOffset(3));
}

// ---- Kernels that work here -----------------------------------------------------------------

template <typename T>
struct MaxOf {
  __device__ T operator()(T a, T b) const {
    return static_cast<float>(a) < static_cast<float>(b) ? b : a;
  }
};

// Sums and copies on plain addresses, broadcasts within cooperative groups.
template <typename T>
__global__ void localReduceCopy(T* base, size_t displ, int nSrc, T* out, T* copies, int nDst,
                                size_t count) {
  ncclCoopCta cta;
  ncclLocalReduceSum<T, ncclCoopCta, size_t>(cta, nSrc, base, displ, out, count);
  ncclLocalCopy<T, ncclCoopCta, size_t>(cta, out, nDst, copies, count, count);
  ncclLocalReduceSumCopy<T, ncclCoopCta, size_t>(cta, nSrc, base, displ, nDst, copies, count,
                                                 count);
  auto srcAt = [=](int i) { return base + i * displ; };
  auto dstAt = [=](int i) { return copies + i * count; };
  ncclLsaReduceSumLsaCopy<T, ncclCoopCta, decltype(srcAt), decltype(dstAt), size_t>(
      cta, srcAt, nSrc, dstAt, nDst, count);
  ncclLocalReduceSum<T, ncclCoopCta, decltype(srcAt), size_t>(cta, srcAt, nSrc, out, count);
  ncclLocalCopy<T, ncclCoopCta, decltype(dstAt), size_t>(cta, out, dstAt, nDst, count);
  ncclCoopWarp warp;
  ncclLsaReduceLsaCopy<T, ncclCoopWarp, decltype(srcAt), decltype(dstAt), MaxOf<T>, int>(
      warp, srcAt, nSrc, dstAt, 1, MaxOf<T>{}, static_cast<int>(count));
  cta.sync();
}

__global__ void localCoops(int* out, double* d, half* h, __nv_bfloat16* b) {
  ncclCoopAny any = ncclCoopCta();
  ncclCoopAny warpAny{ncclCoopWarp()};
  const int fromFirst = ncclCoopBcast(ncclCoopCta(), static_cast<int>(threadIdx.x), 0);
  d[threadIdx.x] = ncclCoopBcast(ncclCoopWarp(), 1.0 * threadIdx.x, 3);
  h[threadIdx.x] = ncclCoopBcast(ncclCoopLanes(), h[threadIdx.x], 1);
  b[threadIdx.x] = ncclCoopBcast(ncclCoopTile<8>(), b[threadIdx.x], 2, false);
  const float f = ncclCoopBcast(ncclCoopWarpSpan(0, 2, 1), 2.0f * threadIdx.x, 0);
  const ncclCoopLanes lanes = ncclCoopCoalesced(ncclCoopLanes{0xffffu});
  const ncclCoopWarp whole = ncclCoopCoalesced(ncclCoopCta());
  any.sync();
  warpAny.sync();
  out[threadIdx.x] = fromFirst + any.thread_rank() + any.size() + warpAny.num_threads() +
                     lanes.size() + whole.size() + static_cast<int>(f);
}

__global__ void localTeams(ncclDevComm devComm, int* out) {
  const ncclTeam flat = ncclTeamCft(devComm), byLsa = ncclTeamCft(devComm, NCCL_CFT_TEAM_HIER_LSA);
  const ncclTeam mm = ncclTeamCftMultimem(devComm);
  const ncclSymPtr<char> res = ncclGetResourceBuffer(devComm, devComm.lsaBarrier.bufHandle);
  out[0] = flat.nRanks + byLsa.stride + mm.rank + ncclTeamRankInDifference(flat, byLsa, 0) +
           static_cast<int>(res.offset);
}

// ---- Kernels that compile and trap ------------------------------------------------------------

template <typename T>
__global__ void llAllToAll(ncclDevComm devComm, ncclLLA2AHandle handle, T* out, int nElts) {
  ncclCoopCta cta;
  ncclLLA2ASession<ncclCoopCta> session(cta, devComm, ncclTeamLsa(devComm), handle, blockIdx.x,
                                        nElts);
  for (int peer = 0; peer < devComm.lsaSize; peer++) session.send(peer, threadIdx.x, out[peer]);
  session.bcast(threadIdx.x, out[0]);
  T vals[4];
  session.template recvUnrolled<1, 4>(threadIdx.x, 4, blockDim.x, vals);
  const float sum = session.template recvReduce<2, T>(
      threadIdx.x, nElts, blockDim.x, [](T x) { return static_cast<float>(x); },
      [](float a, float c) { return a + c; });
  out[threadIdx.x] = session.template recv<T>(threadIdx.x);
  out[0] = static_cast<T>(sum + static_cast<float>(vals[0]));
  session.endEpoch(cta);
}

template <typename T>
__global__ void symmetric(ncclSymPtr<T> src, ncclSymPtr<T> dst, size_t count, ncclDevComm devComm,
                          T* scratch) {
  ncclCoopCta cta;
  T* mine = src.localPtr();
  T* peer = (src + blockIdx.x).peerPtr(ncclTeamWorld(devComm), 1);
  scratch[0] = *dst.lsaPtr(0) + *peer + *mine;
  ncclLsaReduceSumCopy<T, ncclCoopCta, size_t>(cta, src, dst, count, ncclTeamLsa(devComm));
  ncclLsaReduceSumCopy<T, ncclCoopCta, size_t>(cta, src, ncclTeamLsa(devComm), dst,
                                               ncclTeamWorld(devComm), count);
  ncclLsaReduceSum<T, ncclCoopCta, size_t>(cta, src, scratch, count, devComm);
  ncclLsaCopy<T, ncclCoopCta, size_t>(cta, scratch, dst, count, devComm);
  ncclMultimemReduceSumCopy<T, ncclCoopCta, size_t>(cta, src, devComm.lsaMultimem, dst,
                                                    devComm.lsaMultimem, count);
  ncclMultimemReduceSum<T, ncclCoopCta, size_t>(cta, src, scratch, count, devComm.lsaMultimem);
  ncclMultimemCopy<T, ncclCoopCta, size_t>(cta, scratch, dst.multimemPtr(devComm.lsaMultimem),
                                           count);
  ncclLsaReduceSumMultimemCopy<T, ncclCoopCta, size_t>(cta, src, ncclTeamLsa(devComm), dst,
                                                       devComm.lsaMultimem, count);
  ncclMultimemReduceSumLsaCopy<T, ncclCoopCta, size_t>(cta, src, devComm.lsaMultimem, dst,
                                                       ncclTeamLsa(devComm), count);
}

__global__ void cft(ncclDevComm devComm, ncclWindow_t win, size_t offset) {
  __shared__ ncclCftSmem smem;
  __shared__ alignas(16) float staging[64];
  ncclCoopCta cta;
  ncclCftBarrierSession<ncclCoopCta> bar(cta, devComm, blockIdx.x);
  bar.sync(cta, cuda::memory_order_acq_rel, ncclMemProxyType::Generic, ncclMemProxyType::Fabric);
  ncclCft<ncclCoopCta> queue(cta, smem);
  ncclCftLeId le;
  size_t leOffset;
  ncclGetCftLeInfo(win, offset, 1, ncclTeamCft(devComm), devComm, &le, &leOffset);
  queue.put(ncclCoopWarp(), le, leOffset, staging, sizeof staging);
  queue.red(ncclCoopWarp(), le, leOffset, ncclCftOpSum<float>{}, staging, sizeof staging);
  queue.submit(cta);
  queue.flush(cta);
  ncclMemFence(cta, cuda::memory_order_release, ncclMemProxyType::Generic, ncclMemProxyType::Fabric,
               ncclMemFenceScope::Sys);
  if (bar.sync(cta, cuda::memory_order_acquire, ncclMemProxyType::Fabric, ncclMemProxyType::Generic,
               1000000) == ncclTimeout)
    staging[0] = 0;
}

__global__ void gin(ncclDevComm devComm, ncclWindow_t win, ncclSymPtr<float> sym, uint64_t* out) {
  __shared__ ncclGinDescriptorSmem descriptor;
  ncclGin context(devComm, 0, NCCL_GIN_RESOURCE_SHARING_CTA);
  ncclGin_BackendOne<NCCL_NET_DEVICE_GIN_GDAKI> gdaki(devComm, 1);
  const ncclTeam world = ncclTeamWorld(devComm);
  context.put(world, 1, sym, sym, 16, ncclGin_WeakSignalInc{0}, ncclGin_WeakCounterInc{0},
              ncclCoopWarp(), ncclGin_DescriptorSmem{&descriptor});
  context.putValue(world, 1, sym, 1.0f, ncclGin_StrongVASignalAdd{win, 0, 2});
  context.signal(world, 1, ncclGin_WeakVASignalInc{win, 8});
  context.signal(world, 1, ncclGin_StrongSignalAdd{1, 3}, ncclCoopWarp());
  gdaki.flush(ncclCoopWarp());
  ncclGinRequest_t request;
  context.flushAsync(world, 1, &request);
  context.wait(request);
  uint32_t before, delta;
  context.waitSignalFollowShadow(ncclCoopCta(), 0, 1u, &before, &delta);
  context.waitSignal(ncclCoopCta(), win, 0, 5);
  context.increaseSignalShadow(0, 1);
  context.resetSignal(win, 0);
  out[0] = context.readSignal(win, 16) + *context.getSignalShadowPtr(0) + before + delta +
           gdaki.readCounter(0);
  ncclGinBarrier(ncclCoopCta(), ncclGinAllContexts(devComm), ncclTeamTagWorld(), blockIdx.x);
  ncclGinBarrier(ncclCoopCta(), context, ncclTeamTagRail(), blockIdx.x, cuda::memory_order_release,
                 ncclGinFenceLevel::None);
  ncclBarrier(ncclCoopCta(), ncclTeamTagWorld(), context, blockIdx.x);
  ncclBarrierSession<ncclCoopCta> bar(ncclCoopCta(), ncclTeamTagLsa(), devComm, blockIdx.x);
  bar.lsaBarrier().sync(ncclCoopCta(), cuda::memory_order_acquire);
  ncclGin_C c(devComm, NCCL_GIN_BACKEND_MASK_ALL, 0);
  ncclGinPut(&c, world, 1, win, 0, win, 64, 64, true, 0, ncclGinSignalInc, 0, false, 0,
             ncclCoopAny(ncclCoopThread()), false, nullptr, cuda::thread_scope_thread,
             cuda::thread_scope_device);
  ncclGinFlush(&c, ncclCoopAny(ncclCoopCta()), cuda::memory_order_acquire);
  const uint32_t fence = ncclGinFenceLevel::Put | ncclGinFenceLevel::Get;
  out[1] = fence + ncclGinReadCounter(&c, 0, 56, cuda::memory_order_relaxed);
}

using LlKernel = void (*)(ncclDevComm, ncclLLA2AHandle, half*, int);
LlKernel llHalf = llAllToAll<half>;
void (*llKernels[])(ncclDevComm, ncclLLA2AHandle, float*, int) = {llAllToAll<float>};
void (*llBf16)(ncclDevComm, ncclLLA2AHandle, __nv_bfloat16*, int) = llAllToAll<__nv_bfloat16>;
void (*llFp8)(ncclDevComm, ncclLLA2AHandle, __nv_fp8_e4m3*, int) = llAllToAll<__nv_fp8_e4m3>;
void (*symFloat)(ncclSymPtr<float>, ncclSymPtr<float>, size_t, ncclDevComm,
                 float*) = symmetric<float>;
void (*symHalf)(ncclSymPtr<half>, ncclSymPtr<half>, size_t, ncclDevComm, half*) = symmetric<half>;
void (*symBf16)(ncclSymPtr<__nv_bfloat16>, ncclSymPtr<__nv_bfloat16>, size_t, ncclDevComm,
                __nv_bfloat16*) = symmetric<__nv_bfloat16>;
void (*localFloat)(float*, size_t, int, float*, float*, int, size_t) = localReduceCopy<float>;
void (*localHalf)(half*, size_t, int, half*, half*, int, size_t) = localReduceCopy<half>;
void (*localBf16)(__nv_bfloat16*, size_t, int, __nv_bfloat16*, __nv_bfloat16*, int,
                  size_t) = localReduceCopy<__nv_bfloat16>;
void (*localE4m3)(__nv_fp8_e4m3*, size_t, int, __nv_fp8_e4m3*, __nv_fp8_e4m3*, int,
                  size_t) = localReduceCopy<__nv_fp8_e4m3>;
void (*localE5m2)(__nv_fp8_e5m2*, size_t, int, __nv_fp8_e5m2*, __nv_fp8_e5m2*, int,
                  size_t) = localReduceCopy<__nv_fp8_e5m2>;
