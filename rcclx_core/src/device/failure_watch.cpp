// Implementation of failure_watch.hpp.
#include "device/failure_watch.hpp"

#include <chrono>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"

namespace rcclx::gpu {
namespace {

// How often the thread looks: detection adds at most this to a failure's reach.
constexpr auto kPollPeriod = std::chrono::milliseconds(10);

const char* subjectName(uint32_t what) {
  switch (static_cast<ctran::WaitSubject>(what)) {
    case ctran::WaitSubject::kSignal: return "a signal";
    case ctran::WaitSubject::kLine: return "a line";
    case ctran::WaitSubject::kLlLine: return "an LL line";
  }
  return "data";
}

}  // namespace

FailureWatch::FailureWatch(ctran::PeerGroup& group, int device, uint64_t timeoutNs)
    : group_(group), timeoutNs_(timeoutNs), report_(device, "the wait report of a communicator") {
  thread_ = std::thread([this] { watchLoop(); });
}

// Kernels may still read the report until they end: it is freed (report_'s destructor) only
// with the communicator, after its GPU state (whose destroy waits for the device when
// collective).
FailureWatch::~FailureWatch() { stop(); }

ctran::WaitBound FailureWatch::waitBound() const { return report_.bound(timeoutNs_); }

void FailureWatch::abortKernels() { report_.abort(); }

void FailureWatch::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stopRequested_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool FailureWatch::reportKernelTimeout() {
  if (!report_.timedOut()) return false;
  std::lock_guard<std::mutex> lock(reportMu_);
  if (timeoutReported_) return true;
  timeoutReported_ = true;
  const ctran::WaitReport& r = report_.report();
  ctran::TimeoutError timeout(
      ctran::strCat("a GPU kernel timed out after ", timeoutNs_ / 1000000, " ms waiting for ",
                    subjectName(r.what), " from rank ", r.peer, " (expected ", r.expected, ", saw ",
                    r.seen, "; RCCLX_TIMEOUT_MS)"),
      r.peer);
  try {
    // As a host wait's timeout: every rank learns it, and the blamed rank may answer for itself.
    group_.reportTimeout(timeout);
  } catch (const ctran::Error&) {
    // The group knows it now (or knew another failure first); the next call raises that.
  }
  return true;
}

void FailureWatch::watchLoop() {
  const int me = group_.rank();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopRequested_.wait_for(lock, kPollPeriod, [this] { return stopping_; })) {
    if (reportKernelTimeout()) {
      CTRAN_WARN("a kernel's wait of this communicator timed out; its kernels were stopped");
      return;
    }
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
