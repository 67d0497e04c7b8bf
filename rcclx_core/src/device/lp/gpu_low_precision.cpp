// Implementation of gpu_low_precision.hpp.
#include "device/lp/gpu_low_precision.hpp"

#include <algorithm>

#include "ctran/checks.hpp"
#include "ctran/device_window.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/peer_group.hpp"
#include "device/device_resources.hpp"
#include "device/lp/lp_gpu_shape.hpp"

namespace rcclx::lp {
namespace {

size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }

void checkType(DataType type, const char* what) {
  CTRAN_CHECK(type == DataType::kFloat32 || type == DataType::kBfloat16, ctran::InvalidArgument,
              what, ": low precision takes float32 or bfloat16, not ", dataTypeName(type));
}

}  // namespace

GpuLowPrecision::GpuLowPrecision(gpu::DeviceResources& resources, size_t stagingBytes,
                                 int maxBlocks, size_t chunkBlocks)
    : res_(resources),
      device_(resources.device()),
      nranks_(resources.nranks()),
      rank_(resources.rank()),
      halfBytes_((stagingBytes + 255) / 256 * 256),
      maxBlocks_(maxBlocks),
      chunkBlocks_(chunkBlocks) {
  CTRAN_CHECK(maxBlocks >= 1 && maxBlocks <= kLpMaxBlocks, ctran::InvalidArgument,
              "RCCLX_LP_GPU_BLOCKS=", maxBlocks, " must be from 1 to ", kLpMaxBlocks);
  CTRAN_CHECK(chunkBlocks >= 1, ctran::InvalidArgument, "RCCLX_LP_GPU_CHUNK_BLOCKS=", chunkBlocks,
              " must be at least 1");
  CTRAN_CHECK(nranks_ <= kLpMaxRanks, ctran::InvalidArgument,
              "low precision on GPU buffers: ", nranks_, " ranks exceed the ", kLpMaxRanks,
              "-rank limit");
  // Where ranks share the GPU the grid fits beside theirs (co_residency.hpp).
  maxBlocks_ = res_.coResidency().fit(gpu::WaitingKernel::kLowPrecision, maxBlocks, kLpThreads);
  bound_ = res_.waitBound();
  window_ =
      &res_.staging(gpu::Staging::kLowPrecision, 2 * halfBytes_, kLpNumSignals, "low precision");
}

bool GpuLowPrecision::capturing(void* stream) {
#if RCCLX_GPU_HIP
  hipStreamCaptureStatus status = hipStreamCaptureStatusNone;
  CTRAN_GPU_CHECK(hipStreamIsCapturing(static_cast<gpuStream_t>(stream), &status),
                  "low precision: querying the stream's capture status");
  return status != hipStreamCaptureStatusNone;
#else
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  CTRAN_GPU_CHECK(cudaStreamIsCapturing(static_cast<gpuStream_t>(stream), &status),
                  "low precision: querying the stream's capture status");
  return status != cudaStreamCaptureStatusNone;
#endif
}

LpStaging GpuLowPrecision::shape(size_t segmentBlocks, size_t blockElems, bool oneSlot) const {
  CTRAN_CHECK(!res_.released(), ctran::InvalidUsage,
              "low precision on GPU buffers: the GPU state was already released");
  const LpShape shape = lpLaunchShape(segmentBlocks, blockElems, nranks_, halfBytes_, maxBlocks_,
                                      chunkBlocks_, oneSlot);
  LpStaging s;
  s.window = window_->handle();
  s.halfBytes = halfBytes_;
  s.bound = bound_;
  s.keepSharedMemoryFree = res_.coResidency().keepSharedMemoryFree();
  s.threads = kLpThreads;
  s.blocks = shape.blocks;
  s.slots = shape.slots;
  s.chunkBlocks = shape.chunkBlocks;
  s.chunkBytes = shape.chunkBytes;
  return s;
}

void GpuLowPrecision::allReduce(size_t blockElems, const void* send, void* recv, size_t count,
                                DataType type, bool average, void* stream) {
  checkType(type, "all_reduce");
  if (count == 0) return;
  const size_t nb = ceilDiv(count, blockElems);
  size_t maxShard = 0;
  for (int p = 0; p < nranks_; ++p) {
    const size_t n = static_cast<size_t>(nranks_);
    maxShard = std::max(maxShard, nb * (p + 1) / n - nb * p / n);
  }
  LpAllReduceArgs a;
  a.send = send;
  a.recv = recv;
  a.count = count;
  a.bf16 = type == DataType::kBfloat16;
  a.average = average;
  a.blockElems = static_cast<int>(blockElems);
  a.staging = shape(maxShard, blockElems, true);
  ctran::GpuDeviceGuard on(device_, "low-precision all_reduce");
  launchLpAllReduce(a, stream);
}

namespace {

/// Fills the exchange arguments common to the three collectives and launches.
void launchExchange(LpExchangeArgs& a, DataType type, size_t blockElems, int device,
                    const char* what, void* stream) {
  a.bf16 = type == DataType::kBfloat16;
  a.blockElems = static_cast<int>(blockElems);
  ctran::GpuDeviceGuard on(device, what);
  launchLpExchange(a, stream);
}

}  // namespace

void GpuLowPrecision::reduceScatterV(size_t blockElems, const void* send, void* recv,
                                     const std::vector<size_t>& counts,
                                     const std::vector<size_t>& displs, DataType type, bool average,
                                     void* stream) {
  checkType(type, "reduce_scatter");
  LpExchangeArgs a;
  a.send = send;
  a.recv = recv;
  size_t maxCount = 0;
  for (int p = 0; p < nranks_; ++p) {
    a.sendOffset[p] = displs[p];
    a.sendCount[p] = counts[p];
    a.recvCount[p] = counts[rank_];  // every rank sends this rank its block rank_
    maxCount = std::max(maxCount, counts[p]);
  }
  if (maxCount == 0) return;
  a.reduce = true;
  a.average = average;
  a.maxBlocks = ceilDiv(maxCount, blockElems);
  a.staging = shape(a.maxBlocks, blockElems, false);
  launchExchange(a, type, blockElems, device_, "low-precision reduce_scatter", stream);
}

void GpuLowPrecision::allGatherV(size_t blockElems, const void* send, void* recv,
                                 const std::vector<size_t>& counts,
                                 const std::vector<size_t>& displs, DataType type, void* stream) {
  checkType(type, "all_gather");
  LpExchangeArgs a;
  a.send = send;
  a.recv = recv;
  size_t maxCount = 0;
  for (int p = 0; p < nranks_; ++p) {
    a.recvOffset[p] = displs[p];
    a.recvCount[p] = counts[p];
    maxCount = std::max(maxCount, counts[p]);
  }
  if (maxCount == 0) return;
  a.sendOffset[0] = 0;
  a.sendCount[0] = counts[rank_];
  a.sameSegment = true;
  a.maxBlocks = ceilDiv(maxCount, blockElems);
  a.staging = shape(a.maxBlocks, blockElems, false);
  launchExchange(a, type, blockElems, device_, "low-precision all_gather", stream);
}

void GpuLowPrecision::allToAll(size_t blockElems, const void* send, void* recv, size_t countPerRank,
                               DataType type, void* stream) {
  checkType(type, "all_to_all");
  if (countPerRank == 0) return;
  LpExchangeArgs a;
  a.send = send;
  a.recv = recv;
  for (int p = 0; p < nranks_; ++p) {
    a.sendOffset[p] = a.recvOffset[p] = static_cast<size_t>(p) * countPerRank;
    a.sendCount[p] = a.recvCount[p] = countPerRank;
  }
  a.maxBlocks = ceilDiv(countPerRank, blockElems);
  a.staging = shape(a.maxBlocks, blockElems, false);
  launchExchange(a, type, blockElems, device_, "low-precision all_to_all", stream);
}

}  // namespace rcclx::lp
