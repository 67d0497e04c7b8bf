// Implementation of gpu_alltoallv_dynamic.hpp (the host side; the kernel is in
// alltoallv_dynamic.cu).
#include "device/alltoallv_dynamic/gpu_alltoallv_dynamic.hpp"

#include <algorithm>
#include <cstring>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "device/device_resources.hpp"

namespace rcclx::gpu {

GpuAllToAllvDynamic::GpuAllToAllvDynamic(DeviceResources& res, size_t slotBytes, void* stream)
    : res_(res), nranks_(res.nranks()) {
  CTRAN_CHECK(!ctran::gpuStreamCapturing(static_cast<gpuStream_t>(stream)), ctran::InvalidUsage,
              "alltoallv_dynamic: the first call on GPU buffers allocates its staging (",
              2 * nranks_ * slotBytes,
              " bytes), which cannot happen during graph capture; make "
              "one call before capturing");
  CTRAN_CHECK(nranks_ <= ctran::kMaxDeviceRanks && 2 * nranks_ <= ctran::kMaxEpochSlots,
              ctran::InvalidArgument, "alltoallv_dynamic: ", nranks_,
              " ranks on GPU buffers; at most ", ctran::kMaxDeviceRanks, " are supported");
  // Where ranks share the GPU the grid fits beside theirs (co_residency.hpp): the transfers
  // take at most half of the blocks that fit, the self copy the rest.
  const int room = res.coResidency().maxBlocks(WaitingKernel::kAllToAllvDynamic, kDynamicThreads);
  lanes_ =
      std::max(1, std::min({kLanes, ctran::kMaxEpochSlots / (2 * nranks_), room / (4 * nranks_)}));
  selfBlocks_ =
      std::max(1, std::min({kSelfBlocks, ctran::kMaxEpochSlots - blocks(), room - blocks()}));
  slotBytes_ = std::max<size_t>(16, slotBytes / lanes_ / 16 * 16);
  window_ = &res.staging(Staging::kAllToAllvDynamic, 2 * nranks_ * lanes_ * slotBytes_,
                         nranks_ * (1 + 2 * lanes_) + 1, "alltoallv_dynamic");
  const size_t bytes = blocks() * sizeof(DynamicStatus);
  void* host = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuHostAllocMapped(&host, bytes), "alltoallv_dynamic: ", bytes,
                  " bytes of mapped host memory for its status");
  std::memset(host, 0, bytes);
  hostStatus_ = static_cast<DynamicStatus*>(host);
  void* dev = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuHostDevicePointer(&dev, host),
                  "alltoallv_dynamic: the device address of its status");
  deviceStatus_ = static_cast<DynamicStatus*>(dev);
}

GpuAllToAllvDynamic::~GpuAllToAllvDynamic() {
  if (hostStatus_ == nullptr) return;
  const gpuError_t e = ctran::gpuHostFreeMapped(hostStatus_);
  if (e != gpuSuccess) CTRAN_WARN("alltoallv_dynamic: freeing its status: ", gpuGetErrorString(e));
}

std::string GpuAllToAllvDynamic::takeRecorded() {
  std::string first;
  // Receive blocks come after send blocks: an invalid sender is named before the overflows it
  // may have caused downstream.
  for (int b = 0; b < blocks(); ++b) {
    volatile DynamicStatus* s = hostStatus_ + b;
    if (s->kind == DynamicStatus::kNone) continue;
    if (first.empty()) {
      switch (s->kind) {
        case DynamicStatus::kInvalidOwn:
          first = ctran::strCat("alltoallv_dynamic: input_split_sizes[", s->entry, "]=", s->rows,
                                " on rank ", s->sender, " is negative or ends past the input's ",
                                s->capacity,
                                " rows (an earlier call on GPU buffers; nothing was sent)");
          break;
        case DynamicStatus::kInvalidPeer:
          first = ctran::strCat("alltoallv_dynamic: rank ", s->receiver,
                                " received invalid counts from rank ", s->sender,
                                " (an earlier call on GPU buffers; that rank reports which)");
          break;
        default: {
          RecvPlacement pl;
          pl.overflowFrom = s->sender;
          pl.overflowRows = s->rows;
          pl.overflowAt = s->at;
          pl.totalRows = s->total;
          first = overflowMessage(pl, s->receiver, static_cast<size_t>(s->capacity)) +
                  " (an earlier call on GPU buffers)";
        }
      }
    }
    s->kind = DynamicStatus::kNone;
  }
  return first;
}

void GpuAllToAllvDynamic::run(const DynamicCall& call, void* stream) {
  // What earlier kernels recorded is read before this launch and raised after it: the error
  // may be this rank's alone (an overflow), and a rank that skipped the launch would leave its
  // peers waiting.
  const std::string recorded = takeRecorded();
  DynamicKernelArgs a;
  a.window = window_->handle();
  a.call = call;
  a.slotBytes = slotBytes_;
  a.lanes = lanes_;
  a.selfBlocks = selfBlocks_;
  a.keepSharedMemoryFree = res_.coResidency().keepSharedMemoryFree();
  a.bound = res_.waitBound();
  a.status = deviceStatus_;
  launchAllToAllvDynamic(a, stream);
  if (!recorded.empty()) throw ctran::InvalidArgument(recorded);
}

}  // namespace rcclx::gpu
