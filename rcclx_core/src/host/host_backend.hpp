// HostBackend: every collective on host buffers. Calls arrive validated by the front door
// (front_door.cpp); each takes a tag and runs its algorithm on the caller's thread, or on the
// executor's worker for async calls and inside groups. Owns the host resources: channels, the
// DDA arena, the executor and the low-precision scratch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/collectives/group_reductions.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/host_layout.hpp"
#include "rcclx/buffer.hpp"
#include "rcclx/work.hpp"
#include "selector.hpp"
#include "settings.hpp"
#include "tags.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {

class Channels;
class DirectArena;
class Executor;
namespace lp {
class HostLowPrecision;
}

class HostBackend {
 public:
  /// Collective over `group`: connects the channels and, when every peer is reached through
  /// shared memory and DDA is on, maps the DDA arena.
  HostBackend(ctran::PeerGroup& group, const Settings& settings);
  ~HostBackend();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  bool directAccess() const { return arena_ != nullptr; }
  /// The selector's choice for an allreduce of `bytes` on host buffers under `cfg`.
  Selection select(size_t bytes, DataType type, RedOp op, const SelectorConfig& cfg) const;
  /// The choice for all_gather, reduce_scatter, broadcast or reduce (`c`) of `bytes` (as
  /// estimateCost() counts them) under the communicator's settings; `root` for the rooted ones.
  CollectiveSelection selectCollective(CostCollective c, size_t bytes, int root = 0) const;

  WorkPtr allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                    const CallOptions& opts);
  WorkPtr reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
                 const CallOptions& opts);
  WorkPtr broadcast(const void* send, void* recv, size_t bytes, int root, bool async);
  WorkPtr allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                     const std::vector<size_t>& displs, DataType type, const CallOptions& opts);
  WorkPtr reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                         const std::vector<size_t>& displs, DataType type, RedOp op,
                         const CallOptions& opts);
  /// Low precision when planned, else the all_to_all_v exchange of equal blocks. Both, and
  /// allToAllV, take send == recv (in place, as NCCL does): they run from a copy of the input.
  WorkPtr allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                   const CallOptions& opts);
  /// all_to_all_v: one exchange (transfer_plan.hpp); counts and displacements in elements of
  /// `elem` bytes.
  WorkPtr allToAllV(const void* send, void* recv, const std::vector<size_t>& sendCounts,
                    const std::vector<size_t>& sendDispls, const std::vector<size_t>& recvCounts,
                    const std::vector<size_t>& recvDispls, size_t elem, bool async);
  /// gather, scatter, barrier: one exchange (transfer_plan.hpp).
  WorkPtr exchange(OpKind kind, std::function<Exchange()> build, bool async);
  /// allToAllvDynamic: the counts are read when the call runs.
  WorkPtr allToAllvDynamic(const DynamicCall& call, bool async);
  /// One send or receive (recorded inside a group).
  WorkPtr pointToPoint(const P2POp& op, bool async);

  /// Calls from now until groupEnd() are recorded, then run together.
  void groupStart() { grouping_ = true; }
  WorkPtr groupEnd(bool async);
  /// Ends the group, dropping its recorded calls.
  void groupCancel();
  /// Runs `fn`, whose calls on this back-end then run at once even while a group is open (the
  /// group's recorded calls stay recorded and run at its end): for the staged device
  /// back-end, which copies a call's outputs back to the GPU as soon as the call returns.
  void runOutsideGroup(const std::function<void()>& fn);
  /// Queues `fn` (named `what` in its Work) behind every call submitted so far and returns at
  /// once; calls submitted later run after it. For the staged device back-end's steps around a
  /// call's host part (waiting for the stream to stage the inputs, releasing it afterwards).
  WorkPtr enqueueInOrder(const char* what, std::function<void()> fn);
  /// Runs `fn` with the executor's wake-ups held (Executor::HeldWakeups): an idle worker is
  /// woken once, when `fn` returned, for everything it queued (a worker still busy with earlier
  /// tasks takes them up as it gets to them). For the staged device back-end, which queues
  /// three tasks per piece and then launches the kernel they wait for.
  void queueTogether(const std::function<void()>& fn);

  /// Waits for all submitted work; stop() also ends the worker.
  void finalize();
  void stop();
  /// Releases the channels and the arena (after stop()).
  void destroy();

 private:
  uint64_t nextTag(OpKind kind, const CallAgreement& agreement = {}) {
    return makeTag(kind, ++seq_, agreement);
  }
  template <typename Fn>
  WorkPtr submit(OpKind kind, uint64_t tag, Fn&& fn, bool async);
  /// `fn` reporting a failure it raises (a dead peer, a timeout) to every rank of the group.
  template <typename Fn>
  auto reportingFailures(Fn&& fn);
  /// selectCollective(), logged at INFO.
  CollectiveAlgo chooseCollective(CostCollective c, size_t bytes, int root, uint64_t tag) const;
  void runAllReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                    double scalar, AllReduceAlgo algo, uint64_t tag);

  ctran::PeerGroup& group_;
  const Settings& settings_;
  int rank_;
  int nranks_;
  int nHosts_;
  HostLayout layout_;    ///< ranks by host, for the hierarchical algorithms and the cost model
  FoldOrder foldOrder_;  ///< the order every reduction folds the ranks' inputs in
  GroupReductions reductions_;  ///< deterministic (RCCLX_DETERMINISTIC) or ring/chain
  std::unique_ptr<Channels> channels_;
  std::unique_ptr<DirectArena> arena_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<lp::HostLowPrecision> lp_;
  uint64_t seq_ = 0;
  bool grouping_ = false;
  std::vector<std::function<void()>> groupedCollectives_;
  std::vector<P2POp> groupedP2P_;
};

}  // namespace rcclx
