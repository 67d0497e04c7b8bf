// Implementation of host_backend.hpp.
#include "host/host_backend.hpp"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"
#include "host/cpu/reduce.hpp"
#include "host/direct/direct_arena.hpp"
#include "host/executor.hpp"
#include "host/lp/low_precision.hpp"
#include "host/p2p/channels.hpp"

namespace rcclx {
namespace {

/// An all_to_all in place (send == recv) runs from a copy of its input's `bytes`, kept in
/// `aside`: blocks received would overwrite blocks not yet sent. `send` otherwise.
const void* inputAside(const void* send, const void* recv, size_t bytes, std::vector<char>& aside) {
  if (send != recv || bytes == 0) return send;
  const char* in = static_cast<const char*>(send);
  aside.assign(in, in + bytes);
  return aside.data();
}

// PREMUL_SUM: a scaled copy of this rank's input (owned by the returned buffer); AVG and
// PREMUL_SUM then combine as SUM.
std::shared_ptr<std::vector<char>> premulCopy(const void* send, size_t count, DataType type,
                                              double scalar) {
  auto buf = std::make_shared<std::vector<char>>(count * dataTypeSize(type));
  cpu::scale(buf->data(), send, count, type, scalar);
  return buf;
}

RedOp combineOp(RedOp op) {
  return op == RedOp::kAvg || op == RedOp::kPreMulSum ? RedOp::kSum : op;
}

lp::LpRequest lpRequest(lp::LpCollective c, size_t bytes, DataType type, RedOp op, int nranks,
                        const CallOptions& opts) {
  lp::LpRequest r;
  r.collective = c;
  r.bytes = bytes;
  r.type = type;
  r.op = op;
  r.nranks = nranks;
  r.hint = opts.lowPrecision;
  return r;
}

}  // namespace

HostBackend::HostBackend(ctran::PeerGroup& group, const Settings& settings)
    : group_(group),
      settings_(settings),
      rank_(group.rank()),
      nranks_(group.nranks()),
      nHosts_(group.topology().nHosts),
      layout_(HostLayout::from(group.topology())),
      foldOrder_(FoldOrder::of(layout_)),
      reductions_{settings.deterministic} {
  channels_ = std::make_unique<Channels>(group, settings.p2pChunkBytes, settings.p2pSlots,
                                         settings.timeoutMs);
  lp_ = std::make_unique<lp::HostLowPrecision>(*channels_, settings.lp.anyEnabled());
  bool allShm = true;
  for (int p = 0; p < nranks_; ++p) {
    auto k = group.transportTo(p);
    allShm &= k == ctran::TransportKind::kSelf || k == ctran::TransportKind::kShm;
  }
  if (settings.ddaEnable && allShm) {
    // One staging for every DDA algorithm: slots of the largest step any of them takes.
    const size_t slot = std::max(settings.ddaChunkBytes, settings.ddaLargeChunkBytes);
    arena_ = std::make_unique<DirectArena>(group, slot, settings.timeoutMs);
  }
  executor_ = std::make_unique<Executor>();
}

HostBackend::~HostBackend() = default;

template <typename Fn>
auto HostBackend::reportingFailures(Fn&& fn) {
  // The one place host work fails: the first rank to see a failure tells the others, which
  // then raise it at their next wait instead of waiting out their own timeout on this rank.
  return [group = &group_, fn = std::forward<Fn>(fn)]() mutable {
    try {
      fn();
    } catch (const ctran::TimeoutError& e) {
      group->reportTimeout(e);
      throw;
    } catch (const ctran::RemoteError& e) {
      // Not when it is the failure another rank reported, raised here.
      if (!group->failure()) group->reportFailure(-1, e.what());
      throw;
    } catch (const MismatchedCalls& e) {
      // The peers raise it at their next wait rather than time out or read the wrong chunks.
      group->reportFailure(-1, e.what());
      throw;
    } catch (const MismatchedArguments& e) {
      group->reportFailure(-1, e.what());
      throw;
    }
  };
}

template <typename Fn>
WorkPtr HostBackend::submit(OpKind kind, uint64_t tag, Fn&& fn, bool async) {
  if (grouping_) {
    groupedCollectives_.emplace_back(std::forward<Fn>(fn));
    return nullptr;
  }
  return executor_->submit(opKindName(kind), tagSeq(tag), reportingFailures(std::forward<Fn>(fn)),
                           async);
}

Selection HostBackend::select(size_t bytes, DataType type, RedOp op,
                              const SelectorConfig& cfg) const {
  SelectorInput in;
  in.bytes = bytes;
  in.type = type;
  in.op = op;
  in.nranks = nranks_;
  in.nHosts = nHosts_;
  in.directAccess = arena_ != nullptr;
  in.gpu = false;
  in.deterministic = settings_.deterministic;
  in.hostSizes = &layout_.hostSizes;
  return selectAllReduce(in, cfg);
}

CollectiveSelection HostBackend::selectCollective(CostCollective c, size_t bytes, int root) const {
  SelectorInput in;
  in.bytes = bytes;
  in.nranks = nranks_;
  in.nHosts = nHosts_;
  in.directAccess = arena_ != nullptr;
  in.hostSizes = &layout_.hostSizes;
  in.rootHostRanks = layout_.hostSizes[group_.topology().hostOf[root]];
  return rcclx::selectCollective(c, in, settings_.selector);
}

CollectiveAlgo HostBackend::chooseCollective(CostCollective c, size_t bytes, int root,
                                             uint64_t tag) const {
  // On the caller's thread, like allreduce's: a forced algorithm that cannot run fails here.
  const CollectiveSelection sel = selectCollective(c, bytes, root);
  CTRAN_INFO(describeTag(tag), ": ", bytes, " bytes on ", nranks_, " ranks -> ",
             collectiveAlgoName(sel.algo), " (", sel.reason(), ")");
  return sel.algo;
}

void HostBackend::runAllReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                               double scalar, AllReduceAlgo algo, uint64_t tag) {
  // Lower PREMUL_SUM (scale this rank's input first) and AVG (sum, then divide) to SUM.
  if (op == RedOp::kPreMulSum) {
    cpu::scale(recv, send, count, type, scalar);
    send = recv;
  }
  const RedOp combine = combineOp(op);
  switch (algo) {
    case AllReduceAlgo::kDdaFlat:
      ddaFlatAllReduce(*arena_, foldOrder_, send, recv, count, type, combine,
                       settings_.ddaChunkBytes, tag);
      break;
    case AllReduceAlgo::kDdaTree:
      ddaTreeAllReduce(*arena_, foldOrder_, send, recv, count, type, combine,
                       settings_.ddaChunkBytes, tag);
      break;
    case AllReduceAlgo::kDdaLarge:
      ddaLargeAllReduce(*arena_, foldOrder_, send, recv, count, type, combine,
                        settings_.ddaLargeChunkBytes, tag);
      break;
    case AllReduceAlgo::kFlat:
      flatAllReduce(*channels_, foldOrder_, send, recv, count, type, combine, tag);
      break;
    case AllReduceAlgo::kHierarchical:
      hierarchicalAllReduce(*channels_, layout_, reductions_, send, recv, count, type, combine,
                            tag);
      break;
    default:
      reductions_.allReduce(*channels_, RankGroup::all(rank_, nranks_), foldOrder_, send, recv,
                            count, type, combine, tag);
      break;
  }
  if (op == RedOp::kAvg) cpu::divide(recv, count, type, nranks_);
}

WorkPtr HostBackend::allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                               const CallOptions& opts) {
  const size_t bytes = count * dataTypeSize(type);
  const uint64_t tag = nextTag(OpKind::kAllReduce, {type, op, std::nullopt});
  if (auto plan = lp::planLowPrecision(
          settings_.lp, lpRequest(lp::LpCollective::kAllReduce, bytes, type, op, nranks_, opts),
          "all_reduce", tagSeq(tag))) {
    lp_->checkFits(plan->blockElems, "all_reduce");
    lp::HostLowPrecision* lp = lp_.get();
    return submit(
        OpKind::kAllReduce, tag, [=] { lp->allReduce(*plan, send, recv, count, type, op, tag); },
        opts.async);
  }
  // The selection (and its error, for a forced algorithm that cannot run) happens on the
  // caller's thread; its reason is formatted only when INFO logging is on.
  SelectorConfig hinted;
  const SelectorConfig* cfg = &settings_.selector;
  if (!opts.algo.empty()) cfg = &(hinted = withCallHint(settings_.selector, opts.algo));
  const Selection sel = select(bytes, type, op, *cfg);
  CTRAN_INFO(describeTag(tag), ": ", bytes, " bytes on ", nranks_, " ranks -> ", algoName(sel.algo),
             " (", sel.reason(), ")");
  const double scalar = opts.premulScalar;
  const AllReduceAlgo algo = sel.algo;
  return submit(
      OpKind::kAllReduce, tag,
      [=] { runAllReduce(send, recv, count, type, op, scalar, algo, tag); }, opts.async);
}

WorkPtr HostBackend::reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                            int root, const CallOptions& opts) {
  const uint64_t tag = nextTag(OpKind::kReduce, {type, op, root});
  const CollectiveAlgo algo =
      chooseCollective(CostCollective::kReduce, count * dataTypeSize(type), root, tag);
  Channels* ch = channels_.get();
  const HostLayout* lay = &layout_;
  const FoldOrder* order = &foldOrder_;
  const GroupReductions* red = &reductions_;
  const int n = nranks_;
  const int me = rank_;
  const bool isRoot = rank_ == root;
  const double scalar = opts.premulScalar;
  return submit(
      OpKind::kReduce, tag,
      [=] {
        std::shared_ptr<std::vector<char>> scaled;
        const void* in = send;
        if (op == RedOp::kPreMulSum) {
          scaled = premulCopy(send, count, type, scalar);
          in = scaled->data();
        }
        const RedOp c = combineOp(op);
        switch (algo) {
          case CollectiveAlgo::kFlat:
            flatReduce(*ch, *order, in, recv, count, type, c, root, tag);
            break;
          case CollectiveAlgo::kHierarchical:
            hierarchicalReduce(*ch, *lay, *red, in, recv, count, type, c, root, tag);
            break;
          default:
            red->reduce(*ch, RankGroup::all(me, n), *order, in, recv, count, type, c, root, tag);
            break;
        }
        if (op == RedOp::kAvg && isRoot) cpu::divide(recv, count, type, n);
      },
      opts.async);
}

WorkPtr HostBackend::broadcast(const void* send, void* recv, size_t bytes, int root, bool async) {
  const uint64_t tag = nextTag(OpKind::kBroadcast, {std::nullopt, std::nullopt, root});
  const CollectiveAlgo algo = chooseCollective(CostCollective::kBroadcast, bytes, root, tag);
  Channels* ch = channels_.get();
  const HostLayout* lay = &layout_;
  return submit(
      OpKind::kBroadcast, tag,
      [=] {
        switch (algo) {
          case CollectiveAlgo::kFlat: flatBroadcast(*ch, send, recv, bytes, root, tag); break;
          case CollectiveAlgo::kHierarchical:
            hierarchicalBroadcast(*ch, *lay, send, recv, bytes, root, tag);
            break;
          default: chainBroadcast(*ch, send, recv, bytes, root, tag); break;
        }
      },
      async);
}

WorkPtr HostBackend::allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                                const std::vector<size_t>& displs, DataType type,
                                const CallOptions& opts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  const uint64_t tag = nextTag(OpKind::kAllGather);
  if (auto plan =
          lp::planLowPrecision(settings_.lp,
                               lpRequest(lp::LpCollective::kAllGather, total * dataTypeSize(type),
                                         type, RedOp::kSum, nranks_, opts),
                               "all_gather", tagSeq(tag))) {
    lp_->checkFits(plan->blockElems, "all_gather");
    lp::HostLowPrecision* lp = lp_.get();
    return submit(
        OpKind::kAllGather, tag,
        [=] { lp->allGatherV(*plan, send, recv, counts, displs, type, tag); }, opts.async);
  }
  const size_t elem = dataTypeSize(type);
  const CollectiveAlgo algo = chooseCollective(CostCollective::kAllGather, total * elem, 0, tag);
  Channels* ch = channels_.get();
  const HostLayout* lay = &layout_;
  return submit(
      OpKind::kAllGather, tag,
      [=] {
        switch (algo) {
          case CollectiveAlgo::kFlat:
            flatAllGatherV(*ch, send, recv, counts, displs, elem, tag);
            break;
          case CollectiveAlgo::kHierarchical:
            hierarchicalAllGatherV(*ch, *lay, send, recv, counts, displs, elem, tag);
            break;
          default: ringAllGatherV(*ch, send, recv, counts, displs, elem, tag); break;
        }
      },
      opts.async);
}

WorkPtr HostBackend::reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                                    const std::vector<size_t>& displs, DataType type, RedOp op,
                                    const CallOptions& opts) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  const uint64_t tag = nextTag(OpKind::kReduceScatter, {type, op, std::nullopt});
  if (auto plan =
          lp::planLowPrecision(settings_.lp,
                               lpRequest(lp::LpCollective::kReduceScatter,
                                         total * dataTypeSize(type), type, op, nranks_, opts),
                               "reduce_scatter", tagSeq(tag))) {
    lp_->checkFits(plan->blockElems, "reduce_scatter");
    lp::HostLowPrecision* lp = lp_.get();
    return submit(
        OpKind::kReduceScatter, tag,
        [=] { lp->reduceScatterV(*plan, send, recv, counts, displs, type, op, tag); }, opts.async);
  }
  const CollectiveAlgo algo =
      chooseCollective(CostCollective::kReduceScatter, total * dataTypeSize(type), 0, tag);
  Channels* ch = channels_.get();
  const HostLayout* lay = &layout_;
  const FoldOrder* order = &foldOrder_;
  const GroupReductions* red = &reductions_;
  const int n = nranks_;
  const int me = rank_;
  const size_t mine = counts[rank_];
  const double scalar = opts.premulScalar;
  size_t extent = 0;  // the input's elements: the blocks may leave gaps (displs)
  for (size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) extent = std::max(extent, displs[r] + counts[r]);
  }
  return submit(
      OpKind::kReduceScatter, tag,
      [=] {
        std::shared_ptr<std::vector<char>> scaled;
        const void* in = send;
        if (op == RedOp::kPreMulSum) {
          scaled = premulCopy(send, extent, type, scalar);
          in = scaled->data();
        }
        const RedOp c = combineOp(op);
        switch (algo) {
          case CollectiveAlgo::kFlat:
            flatReduceScatterV(*ch, *order, in, recv, counts, displs, type, c, tag);
            break;
          case CollectiveAlgo::kHierarchical:
            hierarchicalReduceScatterV(*ch, *lay, *red, in, recv, counts, displs, type, c, tag);
            break;
          default:
            red->reduceScatterV(*ch, RankGroup::all(me, n), *order, in, recv, counts, displs, type,
                                c, tag);
            break;
        }
        if (op == RedOp::kAvg) cpu::divide(recv, mine, type, n);
      },
      opts.async);
}

WorkPtr HostBackend::allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                              const CallOptions& opts) {
  // all_to_all's equal blocks give every rank the same size to decide on (all_to_all_v's
  // counts may differ between ranks, so it stays full precision).
  const size_t total = countPerRank * nranks_;
  if (auto plan =
          lp::planLowPrecision(settings_.lp,
                               lpRequest(lp::LpCollective::kAllToAll, total * dataTypeSize(type),
                                         type, RedOp::kSum, nranks_, opts),
                               "all_to_all")) {
    lp_->checkFits(plan->blockElems, "all_to_all");
    const uint64_t tag = nextTag(OpKind::kAllToAll);
    lp::HostLowPrecision* lp = lp_.get();
    const size_t bytes = total * dataTypeSize(type);
    return submit(
        OpKind::kAllToAll, tag,
        [=] {
          std::vector<char> aside;
          const void* in = inputAside(send, recv, bytes, aside);
          lp->allToAll(*plan, in, recv, countPerRank, type, tag);
        },
        opts.async);
  }
  std::vector<size_t> counts(nranks_, countPerRank);
  std::vector<size_t> displs(nranks_);
  for (int p = 0; p < nranks_; ++p) displs[p] = p * countPerRank;
  return allToAllV(send, recv, counts, displs, counts, displs, dataTypeSize(type), opts.async);
}

WorkPtr HostBackend::allToAllV(const void* send, void* recv, const std::vector<size_t>& sendCounts,
                               const std::vector<size_t>& sendDispls,
                               const std::vector<size_t>& recvCounts,
                               const std::vector<size_t>& recvDispls, size_t elem, bool async) {
  size_t extent = 0;
  for (int p = 0; p < nranks_; ++p)
    extent = std::max(extent, (sendDispls[p] + sendCounts[p]) * elem);
  const uint64_t tag = nextTag(OpKind::kAllToAll);
  Channels* ch = channels_.get();
  const int me = rank_, n = nranks_;
  return submit(
      OpKind::kAllToAll, tag,
      [=] {
        std::vector<char> aside;
        const void* in = inputAside(send, recv, extent, aside);
        runExchange(*ch,
                    allToAllVExchange(me, n, in, sendCounts, sendDispls, recv, recvCounts,
                                      recvDispls, elem),
                    tag);
      },
      async);
}

WorkPtr HostBackend::exchange(OpKind kind, std::function<Exchange()> build, bool async) {
  const uint64_t tag = nextTag(kind);
  Channels* ch = channels_.get();
  return submit(kind, tag, [ch, tag, build] { runExchange(*ch, build(), tag); }, async);
}

WorkPtr HostBackend::allToAllvDynamic(const DynamicCall& call, bool async) {
  const uint64_t tag = nextTag(OpKind::kAllToAllvDynamic);
  Channels* ch = channels_.get();
  const int me = rank_, n = nranks_;
  return submit(
      OpKind::kAllToAllvDynamic, tag, [=] { rcclx::allToAllvDynamic(*ch, me, n, call, tag); },
      async);
}

WorkPtr HostBackend::pointToPoint(const P2POp& op, bool async) {
  if (grouping_) {
    groupedP2P_.push_back(op);
    return nullptr;
  }
  Channels* ch = channels_.get();
  return executor_->submit(op.isSend ? "send" : "recv", 0, reportingFailures([ch, op] {
                             std::vector<P2POp> ops{op};
                             runP2PGroup(*ch, ops, makeTag(OpKind::kSendRecv, 0));
                           }),
                           async);
}

WorkPtr HostBackend::groupEnd(bool async) {
  grouping_ = false;
  if (groupedCollectives_.empty() && groupedP2P_.empty()) {
    // Nothing to run (a group of GPU calls only, or none). A synchronous empty group would
    // still wait behind every call queued on the executor: for a group of GPU sends and
    // receives across hosts, their whole exchange.
    auto done = std::make_shared<Work>("group", 0);
    done->complete(nullptr);
    return done;
  }
  auto collectives =
      std::make_shared<std::vector<std::function<void()>>>(std::move(groupedCollectives_));
  auto p2p = std::make_shared<std::vector<P2POp>>(std::move(groupedP2P_));
  groupedCollectives_.clear();
  groupedP2P_.clear();
  Channels* ch = channels_.get();
  return executor_->submit("group", 0, reportingFailures([collectives, p2p, ch] {
                             for (const auto& fn : *collectives) fn();
                             if (!p2p->empty()) {
                               runP2PGroup(*ch, *p2p, makeTag(OpKind::kSendRecv, 0));
                             }
                           }),
                           async);
}

void HostBackend::groupCancel() {
  grouping_ = false;
  groupedCollectives_.clear();
  groupedP2P_.clear();
}

WorkPtr HostBackend::enqueueInOrder(const char* what, std::function<void()> fn) {
  return executor_->submit(what, 0, std::move(fn), /*async=*/true);
}

void HostBackend::queueTogether(const std::function<void()>& fn) {
  Executor::HeldWakeups held(*executor_);
  fn();
}

void HostBackend::runOutsideGroup(const std::function<void()>& fn) {
  struct OpenGroup {  // set aside while fn runs, put back on return and on a throw
    explicit OpenGroup(HostBackend& b)
        : backend(b),
          grouping(std::exchange(b.grouping_, false)),
          collectives(std::move(b.groupedCollectives_)),
          p2p(std::move(b.groupedP2P_)) {
      b.groupedCollectives_.clear();
      b.groupedP2P_.clear();
    }
    ~OpenGroup() {
      backend.grouping_ = grouping;
      backend.groupedCollectives_ = std::move(collectives);
      backend.groupedP2P_ = std::move(p2p);
    }
    HostBackend& backend;
    bool grouping;
    std::vector<std::function<void()>> collectives;
    std::vector<P2POp> p2p;
  } openGroup(*this);
  fn();
}

void HostBackend::finalize() { executor_->drain(); }

void HostBackend::stop() { executor_->stop(); }

void HostBackend::destroy() {
  if (arena_) arena_->destroy();
  channels_->destroy();
  arena_.reset();
  channels_.reset();
}

}  // namespace rcclx
