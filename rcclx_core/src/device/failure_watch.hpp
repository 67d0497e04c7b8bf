// FailureWatch: brings a group's failure to a communicator's kernels, and a kernel's timeout to
// the group. It owns the wait report every in-kernel wait uses (ctran::WaitReport: pinned host
// memory mapped into the device, its first word the abort word every wait polls) and a thread
// that, while the communicator lives, looks every few milliseconds for
//  * a failure of the group (a peer's death, which it detects and reports itself, or any rank's
//    report): it sets the abort word, so kernels waiting on a dead peer end;
//  * a wait of this rank's kernels that ran out of time (a stopped or lost peer, which no host
//    wait sees on the GPU path): that wait already set the abort word; the thread reports the
//    timeout to the group as a host wait would, so every rank's kernels end and raise it.
// Either way the GPU stays usable and the communicator's next call raises the failure.
// Compiled in builds with GPU code only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "ctran/wait_report.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx::gpu {

class FailureWatch {
 public:
  /// Starts watching `group` (every rank on one host), the report mapped for GPU `device`;
  /// kernels' waits last at most `timeoutNs`.
  FailureWatch(ctran::PeerGroup& group, int device, uint64_t timeoutNs);
  ~FailureWatch();
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

  /// The waits' bound with this watch's abort word and report, as kernels address them.
  ctran::WaitBound waitBound() const;
  /// Sets the abort word: every kernel of this communicator stops waiting. Idempotent.
  void abortKernels();
  /// Reports a kernel wait's timeout to the group, once (the first caller, this thread or the
  /// watch's); true if the kernels recorded one. Thread-safe.
  bool reportKernelTimeout();
  /// Stops the thread; call before the group is destroyed. Idempotent.
  void stop();

 private:
  void watchLoop();

  ctran::PeerGroup& group_;
  uint64_t timeoutNs_ = 0;
  ctran::MappedWaitReport report_;
  std::mutex reportMu_;  // held while the timeout is reported
  bool timeoutReported_ = false;
  std::mutex mu_;
  std::condition_variable stopRequested_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rcclx::gpu
