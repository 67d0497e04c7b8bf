// HostProxy: runs the staged device back-end's calls (GPU buffers of a communicator whose
// ranks span hosts) behind the caller's back, in stream order. A call's host part (the host
// back-end's collective on pinned copies of the GPU buffers) runs on the host back-end's
// executor thread, in the order the calls were made (the same on every rank, as the tags
// require), and the calling thread returns as soon as everything is enqueued:
//
//   stream:    the step kernel: copy inputs to the slot, release "staged", wait for "done",
//              copy outputs back, release "finished"
//   executor:  gate (until "staged") -> the host part -> publish ("done" = the call's epoch)
//              (a piece's publish and the next piece's gate are one task)
//
// The words are in the slot's pinned memory, mapped into the GPU: the kernel stores "staged"
// with a system-scope release after the inputs are in the staging, and polls "done" with
// system-scope acquire loads; the gate polls "staged" (spinning, then yielding, then napping).
// The kernel's block copies the regions over the bus itself, so a call is one kernel launch
// whatever its size (no copy engine: each of their copies costs the caller a runtime call), and
// the caller frees a slot by reading its "finished" word (nothing is recorded on the stream for
// it). The caller never waits for the exchange, and the host never synchronizes with the stream.
//
// Slots: each call (each piece of a pipelined one) in flight holds one slot of pinned memory
// mapped into the GPU (its words, then its staging), free again once its copies back have run. A
// call takes the smallest free slot that fits, or grows or adds one, as long as the slots'
// staging together stays within `bytesInFlight` (RCCLX_STAGED_BYTES_IN_FLIGHT) and at most
// kMaxSlots are taken; otherwise it first frees idle staging, then waits on the calling thread for
// the oldest call's copies back. So small calls never wait on the caller, and large ones wait only
// once that much is staged; a call larger than the budget runs alone.
//
// Pipelining: a large call may come in pieces (the staged back-end splits all_reduce, all_gather
// and reduce_scatter past RCCLX_STAGED_CHUNK_BYTES), each with its slot and its host part. The
// host parts are queued in order; on the stream the step kernel copies and releases every
// piece's inputs one after the other, then waits for every piece and copies it back in turn, so
// a piece's copies in and back overlap the host parts of the pieces before and after it. A call
// with more regions than one kernel's arguments hold runs as several kernels in that order.
//
// Graph capture: a call captured into a CUDA graph gets a slot of its own (the graph owns it)
// and, in place of queuing its host part, a host node: each replay's host node numbers the
// replay in the slot and queues the host part, with the argument values of the capture, on a
// communicator of the same ranks that only graph replays use (made at the first capture), so
// replays never interleave with eager calls in an order that could differ between ranks. Its
// step kernel reads the replay's number from the slot. Every rank must replay the graphs of a
// communicator in the same order (as NCCL requires), a captured call's graph is replayed only
// while the communicator lives, and instances of one graph do not replay concurrently (they
// share its slots).
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

#include "ctran/gpu_runtime.hpp"
#include "ctran/wait_report.hpp"
#include "rcclx/work.hpp"
#include "settings.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {
class HostBackend;
}

namespace rcclx::gpu {

class HostProxy {
 public:
  /// Slots at once: calls (and pieces) in flight, whatever their size (each holds a slot until
  /// its copies back ran).
  static constexpr size_t kMaxSlots = 64;

  /// For `host`'s communicator (`group`) on GPU `device`, under its `settings`:
  /// RCCLX_TIMEOUT_MS bounds the host waits; the staging of the calls in flight stays within
  /// RCCLX_STAGED_BYTES_IN_FLIGHT.
  HostProxy(HostBackend& host, ctran::PeerGroup& group, int device, const Settings& settings);
  ~HostProxy();
  HostProxy(const HostProxy&) = delete;
  HostProxy& operator=(const HostProxy&) = delete;

  struct Slot;
  struct GraphStep;
  struct GraphChannel;

  /// Where a call's regions sit in host memory, for its host part.
  class HostCopies {
   public:
    HostCopies(char* staging, std::vector<size_t> offsets)
        : staging_(staging), offsets_(std::move(offsets)) {}
    char* operator()(size_t region) const { return staging_ + offsets_[region]; }

   private:
    char* staging_;
    std::vector<size_t> offsets_;
  };

  /// A call's host part: submits the host collective on `host` (asynchronously) over the host
  /// copies and returns its Work. Holds its arguments by value: a captured call runs it at
  /// every replay.
  using HostPart = std::function<WorkPtr(HostBackend& host, const HostCopies& at)>;
  /// The bytes a data-dependent copy back moves, read from the host copies after the host part.
  using CopyBackBytes = std::function<size_t(const HostCopies& at)>;

  /// One call's GPU memory as host copies: regions are added first, then run() stages the
  /// inputs, queues the host part and enqueues the copies back. A large call may come in
  /// pieces run as a pipeline ("Pipelining" above): nextPiece() starts another.
  class Call {
   public:
    using Region = size_t;

    Call(HostProxy& proxy, void* stream, const char* what);

    /// `bytes` of GPU memory at `gpu` in the current piece, copied to the staging before the
    /// host part (`input`) and back after it (`output`). The same memory added twice to a
    /// piece is one region with both.
    Region add(const void* gpu, size_t bytes, bool input, bool output);
    Region in(const void* gpu, size_t bytes) { return add(gpu, bytes, true, false); }
    Region out(void* gpu, size_t bytes) { return add(gpu, bytes, false, true); }
    /// Copies back only the first `bytes(at)` of output region `r`; `bytes` is called on the
    /// executor after the host part (the rows alltoallv_dynamic received). One piece only.
    void copyBackPrefix(Region r, CopyBackBytes bytes);
    /// Starts another piece: the regions added next belong to it.
    void nextPiece() { ++pieces_; }
    size_t pieces() const { return pieces_; }

    /// Stages the inputs behind the stream's earlier work, queues the host parts (`parts[p]`
    /// for piece p; eagerly: on this thread, which gets what they throw and nothing is copied
    /// back then; captured: at each replay), enqueues the waits and the copies back on the
    /// stream, and returns.
    void run(std::vector<HostPart> parts);
    void run(HostPart part);

   private:
    struct Entry {
      void* gpu;
      size_t bytes;
      bool input;
      bool output;
      size_t piece;
      size_t offset;  ///< in the piece's staging
    };
    /// Lays out the regions of each piece in its staging; returns each piece's bytes.
    std::vector<size_t> layOut();
    /// Piece `piece`'s regions as host copies in `staging`.
    HostCopies copiesIn(size_t piece, char* staging) const;
    /// Enqueues the call on the stream, `slots[p]` holding piece p: `queueHostParts` (which
    /// queues the host parts, or the host node that queues them at each replay), then the step
    /// kernels (of `epochs[p]`, or of the replay number in `replayWords[p]`; proxy_step_plan.hpp),
    /// usually one. An eager call's last kernel stores the slots' finished words.
    void enqueue(const std::vector<Slot*>& slots, const std::vector<uint64_t>& epochs,
                 const std::vector<const uint64_t*>& replayWords,
                 const std::function<void()>& queueHostParts);
    void runEagerly(std::vector<HostPart> parts);
    void capture(std::vector<HostPart> parts);  // host_proxy_graph.cpp

    HostProxy& proxy_;
    void* stream_;
    const char* what_;
    size_t pieces_ = 1;
    std::vector<Entry> regions_;
    Region prefixRegion_ = 0;
    CopyBackBytes prefixBytes_;
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
  /// Keeps `slot` taken until `stream` passes what is enqueued there: `kernelFinishes`, the
  /// call's last step kernel (launched) stores its epoch in the slot's finished word when done
  /// with the staging; otherwise an event recorded on `stream` tells.
  void holdUntilStreamPasses(Slot& slot, void* stream, bool kernelFinishes);
  /// Executor side: until `slot`'s inputs of `epoch` are staged (the step kernel says so), or
  /// `group` failed.
  void waitStaged(const Slot& slot, uint64_t epoch, ctran::PeerGroup& group);
  /// A piece of a call whose host part is being queued: its slot, the epoch of the call in it,
  /// its host part and its host copies.
  struct QueuedPiece {
    Slot* slot;
    uint64_t epoch;
    const HostPart* hostPart;
    const HostCopies* at;
  };
  /// Queues on `host`'s executor the host parts of a call's pieces, in order: the first piece's
  /// gate; then per piece its host part and one task that publishes it (or, on failure, calls
  /// fail()) and gates the next piece. Throws what a host part throws.
  void queueHostParts(HostBackend& host, ctran::PeerGroup& group,
                      const std::vector<QueuedPiece>& pieces, const CopyBackBytes& prefixBytes);
  /// Executor side: a host part failed with `error`; ends every wait of the proxy.
  void fail(std::exception_ptr error);

  // Graph capture (host_proxy_graph.cpp).
  /// The channel of graph replays, made (collectively) by the first capture.
  GraphChannel& graphChannel();
  /// A host node's callback: queues the replay of the GraphStep `step` (no GPU runtime calls).
  static void replay(void* step);
  /// Frees the steps of graphs destroyed since the last call (host thread).
  void releaseGoneGraphs();
  void destroyGraphs(bool collective);

  HostBackend& host_;
  ctran::PeerGroup& group_;
  const Settings& settings_;
  int device_;
  int rank_;
  size_t bytesInFlight_;
  uint64_t waitTimeoutNs_;
  ctran::MappedWaitReport report_;
  gpuEvent_t deviceProbe_ = nullptr;  ///< never recorded: a query returns the device's failure
  std::vector<std::unique_ptr<Slot>> slots_;  ///< never shrinks: queued steps hold references
  std::deque<Slot*> inFlight_;                ///< slots taken, in the order they were taken
  bool destroyed_ = false;
  std::mutex failureMu_;
  std::exception_ptr failure_;            ///< the first host part's error
  std::unique_ptr<GraphChannel> graphs_;  ///< made by the first capture
};

/// A step kernel of a call (host_proxy.cu; proxy_step_plan.hpp cuts a call into them): one
/// block, which runs its parts in order. A part that waits first polls its piece's `done` word
/// until it reaches the epoch (bounded; `rank` names this rank in a timeout's message; after an
/// abort the outputs are not copied); then the block copies the part's copies; a part that
/// releases then stores the epoch into its piece's `staged` word. The epoch is `epoch`, or a
/// captured call's replay number read from `*replay`. Once every part ran, the kernel releases
/// each `finished` word (an eager call's last kernel: the slots' staging is no longer read).
/// Output `prefixCopy` moves only *copyBackBytes bytes. The words and the staging are mapped
/// host memory.
struct ProxyStep {
  /// Bounds that keep the kernel's arguments within a launch's 4 KiB (static_assert in
  /// host_proxy.cu; a launch's host time does not grow with them, see
  /// docs/measurements/2026-12-06_one_launch_proxy_step.md).
  static constexpr int kMaxParts = 32;
  static constexpr int kMaxCopies = 80;
  static constexpr int kMaxPieces = 16;
  struct Copy {
    const void* src;
    void* dst;
    size_t bytes;
  };
  struct Part {
    uint64_t* staged;        ///< releases: the piece's word, else null
    const uint64_t* done;    ///< waits: the piece's word, else null
    const uint64_t* replay;  ///< captured: the piece's replay number, else null
    uint64_t epoch;
    int firstCopy;
    int copies;
  };
  struct Finished {
    uint64_t* word;
    uint64_t epoch;
  };
  const uint64_t* copyBackBytes = nullptr;
  int rank = 0;
  int parts = 0;
  int copies = 0;
  int finished = 0;
  int prefixCopy = -1;
  Part part[kMaxParts] = {};
  Copy copy[kMaxCopies] = {};
  Finished finish[kMaxPieces] = {};
};

/// Enqueues `step` on `stream` (one block; one warp when it copies nothing).
void launchProxyStep(const ProxyStep& step, const ctran::WaitBound& bound, void* stream);

}  // namespace rcclx::gpu
