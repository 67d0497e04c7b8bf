// Implementation of device_resources.hpp.
#include "device/device_resources.hpp"

#include <algorithm>
#include <cstdlib>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "device/allreduce/launch.hpp"
#include "device/alltoallv_dynamic/gpu_alltoallv_dynamic.hpp"
#include "device/collectives/channel_plan.hpp"
#include "device/lp/lp_gpu_launch.hpp"

namespace rcclx::gpu {
namespace {

/// What this rank tells the others about its GPU (co_residency.hpp).
GpuShareReport shareReport(int device) {
  ctran::GpuDeviceGuard guard(device, "reading how GPU kernels fit");
  GpuShareReport r;
  r.gpu = ctran::gpuBusId(device);
  if (r.gpu.empty()) r.gpu = ctran::strCat("device-", device);
  CTRAN_GPU_CHECK(gpuDeviceGetAttribute(&r.sms, gpuDevAttrMultiProcessorCount, device),
                  "reading the multiprocessor count of GPU ", device);
  r.mpsThreadPercent = mpsThreadPercent(std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"));
  auto at = [&r](WaitingKernel k) -> int& { return r.threadsPerSm[static_cast<int>(k)]; };
  at(WaitingKernel::kFlatLl) = flatLlThreadsPerSm();
  at(WaitingKernel::kLines) = std::min(flatLinesThreadsPerSm(), treeLinesThreadsPerSm());
  at(WaitingKernel::kTwoShot) = twoShotThreadsPerSm();
  at(WaitingKernel::kChannels) = std::min(copyBlocksThreadsPerSm(), reduceBlocksThreadsPerSm());
  at(WaitingKernel::kLowPrecision) =
      std::min(lp::lpAllReduceThreadsPerSm(), lp::lpExchangeThreadsPerSm());
  at(WaitingKernel::kAllToAllvDynamic) = allToAllvDynamicThreadsPerSm();
  return r;
}

/// Every rank's report, agreed into one answer that every rank computes alike.
CoResidency agreeCoResidency(ctran::PeerGroup& group, int device) {
  const auto all = group.bootstrap().allGather(shareReport(device).serialize());
  std::vector<GpuShareReport> reports;
  reports.reserve(all.size());
  for (size_t r = 0; r < all.size(); ++r)
    reports.push_back(GpuShareReport::parse(all[r], static_cast<int>(r)));
  return CoResidency::agree(reports);
}

}  // namespace

DeviceResources::DeviceResources(ctran::PeerGroup& group, int device, const Settings& settings)
    : group_(&group), device_(device), rank_(group.rank()), nranks_(group.nranks()) {
  const int64_t timeoutMs = settings.timeoutMs;
  timeoutMs_ = timeoutMs;
  watch_ = std::make_unique<FailureWatch>(
      group, device, static_cast<uint64_t>(timeoutMs > 0 ? timeoutMs : 1) * 1000000ull);
  bound_ = watch_->waitBound();
  tuning_.apply(settings.gpuTuning);
#if !RCCLX_GPU_HIP
  int major = 0;
  CTRAN_GPU_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device),
                  "reading the compute capability of GPU ", device);
  pdlCapable_ = major >= 9;
  linesAvailable_ = true;
#endif
  coResidency_ = agreeCoResidency(group, device);
  if (coResidency_.shared() && rank_ == 0) CTRAN_INFO("GPU launches: ", coResidency_.describe());
  if (settings.gpuGraphRegister)
    graphOutputs_ = std::make_unique<GraphRegistrations>(group, device);
}

DeviceResources::~DeviceResources() = default;

ctran::DeviceWindow& DeviceResources::staging(Staging which, size_t bytes, int signals,
                                              const char* what) {
  CTRAN_CHECK(!released_, ctran::InvalidUsage, what,
              " on GPU buffers: the GPU state was already "
              "released");
  auto& w = windows_[static_cast<int>(which)];
  if (!w) w = std::make_unique<ctran::DeviceWindow>(*group_, device_, bytes, signals);
  return *w;
}

size_t DeviceResources::allocatedBytes() const {
  size_t bytes = scratchBytes_;
  if (signals_ && !signals_->destroyed()) bytes += signals_->allocatedBytes();
  for (const auto& w : windows_) {
    if (w && !w->destroyed()) bytes += w->allocatedBytes();
  }
  return bytes;
}

void* DeviceResources::scratch(size_t bytes, void* stream, const char* what) {
  CTRAN_CHECK(!released_, ctran::InvalidUsage, what,
              " on GPU buffers: the GPU state was already released");
  if (bytes <= scratchBytes_) return scratch_;
  CTRAN_CHECK(!ctran::gpuStreamCapturing(static_cast<gpuStream_t>(stream)), ctran::InvalidUsage,
              what, ": the call needs ", bytes,
              " bytes of GPU scratch, which cannot be allocated during graph capture; make one "
              "call of this size before capturing");
  ctran::GpuDeviceGuard guard(device_, what);
  if (scratch_ != nullptr) {
    // Calls queued before (on any stream) may still read the old scratch: it goes once the GPU
    // is done with them. Growth is rare: the largest call so far sets the size.
    CTRAN_GPU_CHECK(gpuDeviceSynchronize(), "waiting for the calls using the old scratch (", what,
                    ")");
    CTRAN_GPU_CHECK(gpuFree(scratch_), "freeing the old scratch (", what, ")");
    scratch_ = nullptr;
    scratchBytes_ = 0;
  }
  CTRAN_GPU_CHECK(gpuMalloc(&scratch_, bytes), "", bytes, " bytes of GPU scratch (", what, ")");
  scratchBytes_ = bytes;
  return scratch_;
}

void DeviceResources::setTuning(const std::string& spec) {
  Tuning t;
  t.apply(spec);
  tuning_ = t;
}

void DeviceResources::destroy(bool collective) {
  released_ = true;
  if (!collective) watch_->abortKernels();
  // The signals first: without the collective's synchronisation their destroy ends their
  // pending waits, before the buffers their puts go into are unmapped.
  if (signals_ && !signals_->destroyed()) signals_->destroy(collective);
  signals_.reset();
  for (auto& w : symmetric_) {
    if (!w->destroyed()) w->destroy(collective);
  }
  symmetric_.clear();
  for (auto& w : windows_) {
    if (w && !w->destroyed()) w->destroy(collective);
    w.reset();
  }
  // After the windows' destroy waited for this GPU (collective): no kernel stores through them.
  if (graphOutputs_) graphOutputs_->destroy();
  if (scratch_ != nullptr) {
    (void)gpuFree(scratch_);  // the GPU is idle for this communicator (above); nothing to report
    scratch_ = nullptr;
    scratchBytes_ = 0;
  }
  graphOutputs_.reset();
  watch_->stop();  // before the group goes
}

void DeviceResources::agreeOnSymmetric(const char* what, size_t bytes,
                                       const std::string& problem) const {
  CTRAN_CHECK(!released_, ctran::InvalidUsage, what, ": the GPU state was already released");
  // Every rank's buffer has the same size, so an offset valid here is valid on every peer; a
  // rank's own problem travels with its size, so every rank fails together.
  const std::string mine = problem.empty() ? std::to_string(bytes) : "!" + problem;
  const auto all = group_->bootstrap().allGather(ctran::Bytes(mine.begin(), mine.end()));
  for (int r = 0; r < nranks_; ++r) {
    const std::string theirs(all[r].begin(), all[r].end());
    CTRAN_CHECK(theirs.empty() || theirs[0] != '!', ctran::InvalidArgument, what, ": rank ", r,
                ": ", theirs.substr(1));
    CTRAN_CHECK(theirs == mine, ctran::InvalidArgument, what, ": rank ", r, " passed nbytes ",
                theirs, " but rank ", rank_, " passed ", mine,
                " (every rank must pass the same size)");
  }
}

void* DeviceResources::allocSymmetric(size_t bytes) {
  agreeOnSymmetric("alloc_symmetric", bytes,
                   bytes > 0 ? "" : ctran::strCat("nbytes ", bytes, " must be positive"));
  symmetric_.push_back(std::make_unique<ctran::DeviceWindow>(*group_, device_, bytes, 0));
  const ctran::DeviceWindowHandle& h = symmetric_.back()->handle();
  return h.data[h.rank];
}

void DeviceResources::registerSymmetric(void* ptr, size_t bytes) {
  std::string problem;
  if (bytes == 0) problem = "nbytes 0 must be positive";
  const char* begin = static_cast<const char*>(ptr);
  for (const auto& w : symmetric_) {
    const ctran::DeviceWindowHandle& h = w->handle();
    const char* theirs = h.data[h.rank];
    if (problem.empty() && begin < theirs + h.dataBytes && theirs < begin + bytes) {
      problem = ctran::strCat(bytes, " bytes at ", ptr, " overlap the symmetric buffer of ",
                              h.dataBytes, " bytes at ", static_cast<const void*>(theirs),
                              " (deregister or free it first)");
    }
  }
  agreeOnSymmetric("register_symmetric", bytes, problem);
  symmetric_.push_back(std::make_unique<ctran::DeviceWindow>(
      *group_, device_, ctran::DeviceWindow::UserMemory{ptr, bytes}));
}

void DeviceResources::freeSymmetric(void* ptr) {
  for (auto it = symmetric_.begin(); it != symmetric_.end(); ++it) {
    const ctran::DeviceWindowHandle& h = (*it)->handle();
    if (h.data[h.rank] != ptr) continue;
    (*it)->destroy(true);
    symmetric_.erase(it);
    return;
  }
  throw ctran::InvalidArgument(
      ctran::strCat("free_symmetric: ", ptr, " is not a symmetric buffer of this communicator (",
                    symmetric_.size(), " allocated or registered and not yet released)"));
}

const ctran::DeviceWindow& DeviceResources::symmetricWindow(const void* ptr,
                                                            const char* what) const {
  for (const auto& w : symmetric_) {
    const ctran::DeviceWindowHandle& h = w->handle();
    if (h.data[h.rank] == ptr) return *w;
  }
  throw ctran::InvalidArgument(ctran::strCat(
      what, ": ", ptr, " is not the start of a symmetric buffer of this communicator (",
      symmetric_.size(), " allocated or registered and not yet released)"));
}

void DeviceResources::openSignals() {
  CTRAN_CHECK(!released_, ctran::InvalidUsage,
              "open_device_signals: the GPU state was already released");
  if (signals_) return;
  signals_ = std::make_unique<ctran::DeviceRma>(*group_, device_, "one-sided GPU channel");
}

ctran::DeviceRma& DeviceResources::signals(const char* what) {
  CTRAN_CHECK(!released_, ctran::InvalidUsage, what, ": the GPU state was already released");
  CTRAN_CHECK(signals_ != nullptr, ctran::InvalidUsage, what,
              ": the one-sided GPU signals were not opened (open_device_signals, collective)");
  return *signals_;
}

bool DeviceResources::symmetricOutputs(const void* out, size_t bytes, char** peerOut) const {
  const char* at = static_cast<const char*>(out);
  for (const auto& w : symmetric_) {
    const ctran::DeviceWindowHandle& h = w->handle();
    const char* mine = h.data[h.rank];
    if (at < mine || at >= mine + h.dataBytes) continue;
    const size_t offset = static_cast<size_t>(at - mine);
    if (bytes > h.dataBytes - offset) return false;  // runs past the buffer: staged as usual
    char* outputs[ctran::kMaxDeviceRanks] = {};
    for (int r = 0; r < h.nranks; ++r) outputs[r] = h.data[r] + offset;
    // Registered tensors may sit differently modulo 16 (rank 0 registers t, rank 1 t[1:]):
    // then every rank stays staged.
    if (!outputsAlike(outputs, h.nranks)) return false;
    for (int r = 0; r < h.nranks; ++r) peerOut[r] = outputs[r];
    return true;
  }
  return false;
}

}  // namespace rcclx::gpu
