// Compiled by test_abi.py with nvcc (sm_90, C++17) against our include dir alone: kernels and
// host code using NCCL's device API the way NVIDIA's nccl-tests does (LSA barrier sessions on
// a CTA, window pointers, teams, multimem, the copy / reduce helpers, GIN and its barriers),
// the requirements and properties initializers, and ncclDevComm arrays. Only compiled: with
// RCCLX no device communicator exists to run them on.
#include <nccl.h>
#include <nccl_device.h>

static_assert(sizeof(ncclTeam) == 3 * sizeof(int), "ncclTeam is three ints");
static_assert(offsetof(ncclDevCommRequirements, resourceRequirementsList) == 16,
              "the versioned header comes first");
static_assert(offsetof(ncclCommProperties_t, rank) == 16, "the versioned header comes first");

template <typename T>
__global__ void lsaAllReduce(ncclWindow_t sendwin, size_t sendoffset, ncclWindow_t recvwin,
                             size_t recvoffset, size_t count, struct ncclDevComm devComm) {
  ncclLsaBarrierSession<ncclCoopCta> bar{ncclCoopCta(), devComm, ncclTeamLsa(devComm),
                                         devComm.lsaBarrier, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed);
  const int nRanks = devComm.nRanks;
  const size_t first = threadIdx.x + blockDim.x * (devComm.rank + blockIdx.x * nRanks);
  for (size_t i = first; i < count; i += blockDim.x * gridDim.x * nRanks) {
    T v = T{0};
    for (int peer = 0; peer < nRanks; peer++)
      v += static_cast<T*>(ncclGetLsaPointer(sendwin, sendoffset, peer))[i];
    for (int peer = 0; peer < nRanks; peer++)
      static_cast<T*>(ncclGetLsaPointer(recvwin, recvoffset, peer))[i] = v;
  }
  bar.sync(ncclCoopCta(), cuda::memory_order_release);
}

template <typename T>
__global__ void helpers(ncclWindow_t sendwin, size_t sendoffset, ncclWindow_t recvwin,
                        size_t recvoffset, size_t count, struct ncclDevComm devComm) {
  ncclCoopCta cta;
  ncclLsaBarrierSession<ncclCoopCta> bar{cta, devComm, ncclTeamTagLsa(), blockIdx.x, true};
  bar.arrive(cta, cuda::memory_order_release);
  bar.wait(cta, cuda::memory_order_acquire);
  T* local = static_cast<T*>(ncclGetLocalPointer(sendwin, sendoffset));
  T* multi = static_cast<T*>(ncclGetLsaMultimemPointer(recvwin, recvoffset, devComm));
  (void)multi;
  ncclLsaReduceSumCopy<T, ncclCoopCta, size_t>(cta, sendwin, sendoffset, recvwin, recvoffset, count,
                                               devComm);
  ncclLsaCopy<T, ncclCoopCta, size_t>(cta, local, recvwin, recvoffset, count, ncclTeamLsa(devComm));
  ncclMultimemReduceSumCopy<T, ncclCoopCta, size_t>(cta, sendwin, sendoffset, devComm.lsaMultimem,
                                                    recvwin, recvoffset, devComm.lsaMultimem,
                                                    count);
  ncclMultimemCopy<T, ncclCoopCta, size_t>(cta, local, recvwin, recvoffset, count,
                                           devComm.lsaMultimem);
  const ncclTeam rail = ncclTeamRail(devComm);
  if (ncclTeamRankToWorld(devComm, rail, 0) < 0 || ncclTeamRankToLsa(devComm, rail, 0) < 0) return;
  ncclCoopWarp warp;
  warp.sync();
  ncclCoopLanes lanes = ncclCoopCoalesced();
  if (lanes.thread_rank() == 0 && warp.thread_rank() == 0 && cta.size() > 0) return;
}

template <typename T>
__global__ void ginAllGather(ncclWindow_t sendwin, size_t sendoffset, ncclWindow_t recvwin,
                             size_t recvoffset, size_t count, struct ncclDevComm devComm) {
  ncclGin gin{devComm, 0};
  const ncclGinSignal_t signal = 0;
  const uint64_t start = gin.readSignal(signal);
  ncclBarrierSession<ncclCoopCta> bar{ncclCoopCta(), ncclTeamTagWorld(), gin, blockIdx.x};
  bar.sync(ncclCoopCta(), cuda::memory_order_relaxed, ncclGinFenceLevel::Relaxed);
  const size_t bytes = count * sizeof(T);
  for (int r = threadIdx.x; r < devComm.nRanks; r += blockDim.x)
    gin.put(ncclTeamWorld(devComm), r, recvwin, recvoffset + devComm.rank * bytes, sendwin,
            sendoffset, bytes, ncclGin_SignalInc{signal});
  gin.put(ncclTeamWorld(devComm), 0, recvwin, 0, sendwin, 0, bytes, ncclGin_SignalAdd{signal, 2},
          ncclGin_CounterInc{0}, ncclCoopWarp());
  gin.waitSignal(ncclCoopCta(), signal, start + devComm.nRanks);
  gin.flush(ncclCoopCta());
  ncclGinBarrierSession<ncclCoopCta> ginBar{ncclCoopCta(), gin, ncclTeamTagWorld(), blockIdx.x};
  ginBar.sync(ncclCoopCta(), cuda::memory_order_acquire,
              ncclGinFenceLevel::Put | ncclGinFenceLevel::Get);
}

using Kernel = void (*)(ncclWindow_t, size_t, ncclWindow_t, size_t, size_t, ncclDevComm);
Kernel kernels[] = {lsaAllReduce<float>,    lsaAllReduce<double>, helpers<half>,
                    helpers<__nv_bfloat16>, helpers<double>,      ginAllGather<float>};

// The host side of nccl-tests: one device communicator per local GPU, asked for one LSA barrier
// per CTA, and the properties that tell whether to ask at all.
ncclResult_t makeDevComms(ncclComm_t* comms, ncclDevComm* devComms, int nGpus, int ctas) {
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  ncclResult_t res = ncclCommQueryProperties(comms[0], &props);
  if (res != ncclSuccess || !props.deviceApiSupport) return res;
  ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  reqs.lsaBarrierCount = ctas;
  reqs.lsaMultimem = props.multimemSupport;
  ncclGroupStart();
  for (int i = 0; i < nGpus; i++) ncclDevCommCreate(comms[i], &reqs, devComms + i);
  return ncclGroupEnd();
}

ncclResult_t launch(ncclWindow_t send, ncclWindow_t recv, size_t count, ncclDevComm* devComm,
                    cudaStream_t stream) {
  lsaAllReduce<float><<<16, 512, 0, stream>>>(send, 0, recv, 0, count, *devComm);
  return cudaGetLastError() == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

// The host team calls beside their device forms (same names, a communicator instead of a device
// communicator), as a host launcher sizes its grid; ncclTeamCft's mode defaults in C++.
int lsaPeersOf(ncclComm_t comm) {
  const ncclTeam lsa = ncclTeamLsa(comm), rail = ncclTeamRail(comm);
  const ncclTeam cft = ncclTeamCft(comm);
  return lsa.nRanks * rail.nRanks + cft.nRanks + ncclTeamRankToLsa(comm, ncclTeamWorld(comm), 0) +
         ncclTeamRankToWorld(comm, lsa, 0);
}
