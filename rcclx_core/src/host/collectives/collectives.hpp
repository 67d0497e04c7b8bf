// The collectives other than allreduce, on host memory, over point-to-point channels.
// Counts are in elements; every function handles count 0 and a single rank. AVG and
// PREMUL_SUM arrive lowered to SUM (see host_backend.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "alltoallv_dynamic_plan.hpp"
#include "rcclx/types.hpp"
#include "transfer_plan.hpp"

namespace rcclx {

class Channels;
class FoldOrder;
class RankGroup;
struct GroupReductions;
struct HostLayout;

/// One message of a grouped exchange.
struct P2POp {
  bool isSend = false;
  int peer = 0;
  char* buffer = nullptr;  // source for a send, destination for a recv
  size_t bytes = 0;
};

/// Progresses every message of `ops` together until all are done (no ordering between
/// peers, so any pattern of sends and receives completes). Messages to or from one peer are
/// matched in order. All carry `tag`.
void runP2PGroup(Channels& ch, std::vector<P2POp>& ops, uint64_t tag);

/// Runs an exchange (all_to_all_v, gather, scatter, barrier: transfer_plan.hpp): the self
/// block copied, then every send and receive together, all carrying `tag`.
void runExchange(Channels& ch, const Exchange& exchange, uint64_t tag);

/// allToAllvDynamic (alltoallv_dynamic_plan.hpp): counts read now and exchanged, then the
/// rows; every rank fails alike on invalid send counts, a receiver alone on overflow.
void allToAllvDynamic(Channels& ch, int rank, int nranks, const DynamicCall& call, uint64_t tag);

/// Pipelined chain from `root`: rank root+1 receives first, forwards, and so on.
void chainBroadcast(Channels& ch, const void* send, void* recv, size_t bytes, int root,
                    uint64_t tag);
/// The chain among `group`, from its member `root`.
void chainBroadcast(Channels& ch, const RankGroup& group, const void* send, void* recv,
                    size_t bytes, int root, uint64_t tag);

/// Pipelined chain toward `root`, starting at root+1; combined in chain order. recv is
/// written on the root only.
void chainReduce(Channels& ch, const void* send, void* recv, size_t count, DataType type, RedOp op,
                 int root, uint64_t tag);
/// The chain among `group`, toward its member `root`.
void chainReduce(Channels& ch, const RankGroup& group, const void* send, void* recv, size_t count,
                 DataType type, RedOp op, int root, uint64_t tag);

/// Ring all-gather of blocks of `counts[b]` elements placed at `displs[b]` in recv; this
/// rank's block comes from send (which may already sit at its place in recv).
void ringAllGatherV(Channels& ch, const void* send, void* recv, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, size_t elemBytes, uint64_t tag);
/// The ring among `group`: counts and displs indexed by member.
void ringAllGatherV(Channels& ch, const RankGroup& group, const void* send, void* recv,
                    const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                    size_t elemBytes, uint64_t tag);

/// Ring reduce-scatter: send holds block b (counts[b] elements) at displs[b]; this rank's
/// reduced block goes to recv.
void ringReduceScatterV(Channels& ch, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag);
/// The ring among `group`: counts and displs indexed by member.
void ringReduceScatterV(Channels& ch, const RankGroup& group, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag);

// --- Flat forms: one step, every rank straight to every rank that needs its data ---

/// all_gather_v in one exchange: this rank's block to every peer.
void flatAllGatherV(Channels& ch, const void* send, void* recv, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, size_t elemBytes, uint64_t tag);
/// reduce_scatter_v: block p of each chunk to rank p, which folds them in `order`.
void flatReduceScatterV(Channels& ch, const FoldOrder& order, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag);
/// The same among `group`: counts and displs indexed by member.
void flatReduceScatterV(Channels& ch, const RankGroup& group, const FoldOrder& order,
                        const void* send, void* recv, const std::vector<size_t>& counts,
                        const std::vector<size_t>& displs, DataType type, RedOp op, uint64_t tag);
/// broadcast: the root sends to every rank.
void flatBroadcast(Channels& ch, const void* send, void* recv, size_t bytes, int root,
                   uint64_t tag);
/// reduce: every rank sends each chunk to the root, which folds them in `order`.
void flatReduce(Channels& ch, const FoldOrder& order, const void* send, void* recv, size_t count,
                DataType type, RedOp op, int root, uint64_t tag);

// --- Direct forms: every element folded once, from the inputs (fold_order.hpp) ---

/// `count` split into `n` blocks as evenly as possible (the first count % n one longer); their
/// offsets in `displs`.
std::vector<size_t> evenBlocks(size_t count, int n, std::vector<size_t>& displs);
/// reduce among `group` to its member `root`: a flat reduce-scatter of even blocks, then each
/// block to the root (only the root's recv is written).
void directReduce(Channels& ch, const RankGroup& group, const FoldOrder& order, const void* send,
                  void* recv, size_t count, DataType type, RedOp op, int root, uint64_t tag);

// --- Hierarchical forms, across hosts (host_layout.hpp) ---

/// all_gather_v. Split rail (even hosts): each rail exchanges its blocks across hosts, then each
/// host exchanges the blocks its ranks hold. Leader-based (uneven): gather to each host's
/// leader, the leaders exchange their hosts' blocks, each leader sends every block on.
void hierarchicalAllGatherV(Channels& ch, const HostLayout& layout, const void* send, void* recv,
                            const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                            size_t elemBytes, uint64_t tag);
/// reduce_scatter_v. Split rail: the input packed by rail, a reduce-scatter inside each host,
/// then each rail's reduce-scatter across hosts. Leader-based: the input packed by host, a
/// reduce to each leader, the leaders' reduce-scatter of their hosts' blocks, each leader sends
/// its ranks their blocks. Every level reduces through `reductions`.
void hierarchicalReduceScatterV(Channels& ch, const HostLayout& layout,
                                const GroupReductions& reductions, const void* send, void* recv,
                                const std::vector<size_t>& counts,
                                const std::vector<size_t>& displs, DataType type, RedOp op,
                                uint64_t tag);
/// broadcast: a chain across hosts among the representatives (the root, every other host's
/// leader), then a chain inside each host from its representative.
void hierarchicalBroadcast(Channels& ch, const HostLayout& layout, const void* send, void* recv,
                           size_t bytes, int root, uint64_t tag);
/// reduce: a reduce inside each host to its representative, then one among the
/// representatives (in host order) to the root, both through `reductions`.
void hierarchicalReduce(Channels& ch, const HostLayout& layout, const GroupReductions& reductions,
                        const void* send, void* recv, size_t count, DataType type, RedOp op,
                        int root, uint64_t tag);

}  // namespace rcclx
