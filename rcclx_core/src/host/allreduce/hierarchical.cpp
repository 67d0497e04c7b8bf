// Hierarchical allreduce across hosts: split rail when every host has as many ranks, leader-based
// otherwise (allreduce.hpp). Each level reduces among a RankGroup through GroupReductions; a
// host's ranks and the hosts are both groups in fold order, so a deterministic run folds as
// FoldOrder::of(layout) does.
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"
#include "host/collectives/group_reductions.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {
namespace {

// Reduce-scatter inside the host, allreduce of this rank's block along its rail, all-gather
// inside the host. Blocks split `count` as evenly as possible, so every rail carries the same
// count on every host.
void railAllReduce(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                   const void* send, void* recv, size_t count, DataType type, RedOp op,
                   uint64_t tag) {
  const size_t elem = dataTypeSize(type);
  const FoldOrder inOrder = FoldOrder::memberOrder();
  std::vector<size_t> displs;
  const std::vector<size_t> counts = evenBlocks(count, lay.local.size(), displs);
  const int j = lay.local.index();
  char* block = static_cast<char*>(recv) + displs[j] * elem;
  red.reduceScatterV(ch, lay.local, inOrder, send, block, counts, displs, type, op, tag);
  red.allReduce(ch, lay.rail, inOrder, block, block, counts[j], type, op, tag);
  ringAllGatherV(ch, lay.local, block, recv, counts, displs, elem, tag);
}

// Reduce to the host's leader, the leaders' allreduce, chain broadcast from the leader.
void leaderAllReduce(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                     const void* send, void* recv, size_t count, DataType type, RedOp op,
                     uint64_t tag) {
  const FoldOrder inOrder = FoldOrder::memberOrder();
  red.reduce(ch, lay.local, inOrder, send, recv, count, type, op, 0, tag);
  if (lay.isLeader()) red.allReduce(ch, lay.leaders, inOrder, recv, recv, count, type, op, tag);
  chainBroadcast(ch, lay.local, recv, recv, count * dataTypeSize(type), 0, tag);
}

}  // namespace

void hierarchicalAllReduce(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                           const void* send, void* recv, size_t count, DataType type, RedOp op,
                           uint64_t tag) {
  if (lay.even) {
    railAllReduce(ch, lay, red, send, recv, count, type, op, tag);
  } else {
    leaderAllReduce(ch, lay, red, send, recv, count, type, op, tag);
  }
}

}  // namespace rcclx
