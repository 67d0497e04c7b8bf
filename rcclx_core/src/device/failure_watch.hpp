// FailureWatch: brings a group's failure to a communicator's kernels. It owns the abort word
// every in-kernel wait polls (ctran::WaitBound::abort: pinned host memory mapped into the
// device) and a thread that, while the communicator lives, looks every few milliseconds for a
// failure of the group (a peer's death, which it detects and reports itself, or any rank's
// report) and then sets the word: kernels waiting on a dead peer end, the GPU stays usable, and
// the communicator's next call raises the failure. Compiled in builds with GPU code only.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace ctran {
class PeerGroup;
}

namespace rcclx::gpu {

class FailureWatch {
 public:
  /// Starts watching `group` (every rank on one host), the word mapped for GPU `device`.
  FailureWatch(ctran::PeerGroup& group, int device);
  ~FailureWatch();
  FailureWatch(const FailureWatch&) = delete;
  FailureWatch& operator=(const FailureWatch&) = delete;

  /// The abort word as kernels address it.
  const uint32_t* deviceWord() const { return deviceWord_; }
  /// Sets the abort word: every kernel of this communicator stops waiting. Idempotent.
  void abortKernels();
  /// Stops the thread; call before the group is destroyed. Idempotent.
  void stop();

 private:
  void watchLoop();

  ctran::PeerGroup& group_;
  uint32_t* hostWord_ = nullptr;
  const uint32_t* deviceWord_ = nullptr;
  std::mutex mu_;
  std::condition_variable stopRequested_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace rcclx::gpu
