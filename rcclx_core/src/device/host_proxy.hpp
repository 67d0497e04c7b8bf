// HostProxy: runs the staged device back-end's calls (GPU buffers of a communicator whose
// ranks span hosts) behind the caller's back, in stream order. A call's host part (the host
// back-end's collective on pinned copies of the GPU buffers) runs on the host back-end's
// executor thread, in the order the calls were made (the same on every rank, as the tags
// require), and the calling thread returns as soon as everything is enqueued:
//
//   stream:    [copy inputs to the slot] -> the step kernel: [copy inputs], release "staged",
//              wait for "done", [copy outputs back] -> [copy outputs back]
//   executor:  gate (until "staged") -> the host part -> publish ("done" = the call's epoch)
//
// Both words are in the slot's pinned memory, mapped into the GPU: the kernel stores "staged"
// with a system-scope release after the inputs are in the staging, and polls "done" with
// system-scope acquire loads; the gate polls "staged" (spinning, then yielding, then napping).
// A small call (kInlineBytes in a few regions) is a single kernel launch: one block copies its
// regions over the bus itself; a larger one uses the copy engines before and after the kernel.
// The caller's host time does not depend on the message size, and the host never synchronizes
// with the stream.
//
// Slots: each call in flight holds one slot of pinned memory mapped into the GPU (its words, then
// its staging), free again once its copies back have run. A call takes the smallest free slot
// that fits, or grows or adds one, as long as the slots' staging together stays within
// `bytesInFlight` (RCCLX_STAGED_BYTES_IN_FLIGHT) and at most kMaxCallsInFlight calls are in
// flight; otherwise it first frees idle staging, then waits on the calling thread for the
// oldest call's copies back. So small calls never wait on the caller, and large ones wait only
// once that much is staged; a call larger than the budget runs alone.
//
// Failures: when a host part fails (a dead peer, a timeout, a failure another rank reported,
// a call's own error such as alltoallv_dynamic's rows overflowing the output) its publish step
// records the error and sets the abort word instead of the done word, so every wait kernel of
// this proxy ends at once and the stream drains; the outputs of the calls in flight are
// undefined, and every later call raises the recorded error. A wait kernel that runs past its
// bound records itself in the proxy's wait report, and the next call raises that timeout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "ctran/wait_report.hpp"
#include "rcclx/work.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {
class HostBackend;
}

namespace rcclx::gpu {

class HostProxy {
 public:
  /// Calls in flight at once, whatever their size (each holds a slot until its copies back ran).
  static constexpr size_t kMaxCallsInFlight = 64;

  /// For `host`'s communicator (`group`) on GPU `device`; `timeoutMs` bounds the host waits
  /// (RCCLX_TIMEOUT_MS); the staging of the calls in flight stays within `bytesInFlight`.
  HostProxy(HostBackend& host, ctran::PeerGroup& group, int device, int64_t timeoutMs,
            size_t bytesInFlight);
  ~HostProxy();
  HostProxy(const HostProxy&) = delete;
  HostProxy& operator=(const HostProxy&) = delete;

  struct Slot;

  /// One call's GPU memory as host copies: regions are added first, then run() stages the
  /// inputs, queues the host part and enqueues the copies back.
  class Call {
   public:
    using Region = size_t;

    Call(HostProxy& proxy, void* stream, const char* what);

    /// `bytes` of GPU memory at `gpu`, copied to the staging before the host part (`input`)
    /// and back after it (`output`). The same memory added twice is one region with both.
    Region add(const void* gpu, size_t bytes, bool input, bool output);
    Region in(const void* gpu, size_t bytes) { return add(gpu, bytes, true, false); }
    Region out(void* gpu, size_t bytes) { return add(gpu, bytes, false, true); }
    /// Copies back only the first `bytes()` of output region `r`; `bytes` is called on the
    /// executor after the host part (the rows alltoallv_dynamic received). May be called
    /// before run() or inside its `submit`.
    void copyBackPrefix(Region r, std::function<size_t()> bytes);

    /// The host copy of region `r`: valid inside `submit` of run() and in what it queues.
    char* host(Region r) const { return staging_ + regions_[r].offset; }

    /// Stages the inputs behind the stream's earlier work, calls `submit` on this thread (it
    /// submits the host part, asynchronously, on host(r)'s memory, and returns its Work),
    /// enqueues the wait and the copies back on the stream, and returns. Throws what `submit`
    /// throws (nothing is copied back then), InvalidUsage while the stream is capturing.
    void run(const std::function<WorkPtr()>& submit);

   private:
    struct Entry {
      void* gpu;
      size_t bytes;
      bool input;
      bool output;
      size_t offset;  ///< in the staging
    };
    /// Whether the step kernel copies the regions itself (small calls).
    bool inlineCopies() const;
    /// Enqueues the call's `epoch` in `slot`: the inputs' copies, the host part on the
    /// executor, the step kernel, the copies back.
    void enqueue(Slot& slot, uint64_t epoch, bool inlineCopies,
                 const std::function<WorkPtr()>& submit);

    HostProxy& proxy_;
    void* stream_;
    const char* what_;
    std::vector<Entry> regions_;
    Region prefixRegion_ = 0;
    std::function<size_t()> prefixBytes_;
    char* staging_ = nullptr;
  };

  /// Raises the first host part's failure, or the timeout a wait kernel recorded, if any (at
  /// the start of every call).
  void raiseIfFailed();
  /// Waits for every call in flight (collective), or ends their waits (`collective` false:
  /// an abort), then frees the slots. The proxy takes no call afterwards.
  void destroy(bool collective);

 private:
  Slot& acquire(size_t stagingBytes);
  /// Frees the slots at the head of inFlight_ whose stream work has completed.
  void retireCompleted();
  /// Records `slot`'s release on `stream` behind what is enqueued there (it stays taken until
  /// then).
  void holdUntilStreamPasses(Slot& slot, void* stream);
  /// Executor side: until `slot`'s inputs of `epoch` are staged (the step kernel says so), or
  /// the group failed.
  void waitStaged(Slot& slot, uint64_t epoch);
  /// Executor side: a host part failed with `error`; ends every wait of the proxy.
  void fail(std::exception_ptr error);

  HostBackend& host_;
  ctran::PeerGroup& group_;
  int device_;
  int rank_;
  size_t bytesInFlight_;
  uint64_t waitTimeoutNs_;
  ctran::MappedWaitReport report_;
  std::vector<std::unique_ptr<Slot>> slots_;  ///< never shrinks: queued steps hold references
  std::deque<Slot*> inFlight_;                ///< slots taken, in the order they were taken
  bool destroyed_ = false;
  std::mutex failureMu_;
  std::exception_ptr failure_;  ///< the first host part's error
};

/// One call's step on the stream between its inputs and its outputs (host_proxy.cu): copies
/// `in` (device memory to the staging), releases `epoch` into `*staged`, waits until `*done`
/// reaches `epoch` (bounded; `rank` names this rank in a timeout's message), then, unless the
/// wait was aborted, copies `out` back (the output `prefixOutput` only for *copyBackBytes
/// bytes). The words and the staging are mapped host memory.
struct ProxyStep {
  static constexpr int kMaxCopies = 4;
  struct Copy {
    const void* src;
    void* dst;
    size_t bytes;
  };
  uint64_t* staged = nullptr;
  const uint64_t* done = nullptr;
  const uint64_t* copyBackBytes = nullptr;
  uint64_t epoch = 0;
  int rank = 0;
  int inputs = 0;
  int outputs = 0;
  int prefixOutput = -1;
  Copy in[kMaxCopies] = {};
  Copy out[kMaxCopies] = {};
};

/// Enqueues `step` on `stream` (one block; one thread when it copies nothing).
void launchProxyStep(const ProxyStep& step, const ctran::WaitBound& bound, void* stream);
/// Enqueues on `stream` a copy of min(*bytes, maxBytes) bytes from `src` (mapped host memory)
/// to `dst` (device memory), the count read by the kernel.
void launchCopyPrefix(void* dst, const void* src, const uint64_t* bytes, size_t maxBytes,
                      void* stream);

}  // namespace rcclx::gpu
