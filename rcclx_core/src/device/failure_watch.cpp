// Implementation of failure_watch.hpp.
#include "device/failure_watch.hpp"

#include <chrono>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"

namespace rcclx::gpu {
namespace {

// How often the thread looks: detection adds at most this to a failure's reach.
constexpr auto kPollPeriod = std::chrono::milliseconds(10);

}  // namespace

FailureWatch::FailureWatch(ctran::PeerGroup& group, int device) : group_(group) {
  ctran::GpuDeviceGuard guard(device, "the abort word of a communicator");
  void* host = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuHostAllocMapped(&host, sizeof(uint32_t)),
                  "the abort word of a communicator (mapped host memory)");
  hostWord_ = static_cast<uint32_t*>(host);
  *hostWord_ = 0;
  void* dev = nullptr;
  const gpuError_t e = ctran::gpuHostDevicePointer(&dev, host);
  if (e != gpuSuccess) {
    ctran::gpuHostFreeMapped(host);
    ctran::throwGpuError(e, "gpuHostDevicePointer", "the abort word of a communicator");
  }
  deviceWord_ = static_cast<const uint32_t*>(dev);
  thread_ = std::thread([this] { watchLoop(); });
}

FailureWatch::~FailureWatch() {
  stop();
  // Kernels may still read the word until they end: it is freed only with the communicator,
  // after its GPU state (whose destroy waits for the device when collective).
  const gpuError_t e = ctran::gpuHostFreeMapped(hostWord_);
  if (e != gpuSuccess) CTRAN_WARN("freeing the abort word: ", gpuGetErrorString(e));
}

void FailureWatch::abortKernels() { __atomic_store_n(hostWord_, 1u, __ATOMIC_RELEASE); }

void FailureWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stopRequested_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void FailureWatch::watchLoop() {
  const int me = group_.rank();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopRequested_.wait_for(lock, kPollPeriod, [this] { return stopping_; })) {
    // checkPeer reports a dead peer to every rank; any rank's report shows in failure().
    for (int p = 0; p < group_.nranks() && !group_.failure(); ++p) {
      if (p == me) continue;
      try {
        group_.checkPeer(p);
      } catch (const ctran::Error&) {
      }
    }
    if (auto failure = group_.failure()) {
      CTRAN_WARN("stopping this communicator's kernels: ", failure->message());
      abortKernels();
      return;
    }
  }
}

}  // namespace rcclx::gpu
