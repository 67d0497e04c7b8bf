// Hierarchical reduce across hosts (collectives.hpp): a reduce inside each host collects its sum
// at its representative (the root on its host, the leader on every other); one among the
// representatives, in host order, carries the sums to the root.
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/collectives/group_reductions.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {

void hierarchicalReduce(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                        const void* send, void* recv, size_t count, DataType type, RedOp op,
                        int root, uint64_t tag) {
  const Representatives reps = representativesOf(lay, root);
  const FoldOrder inOrder = FoldOrder::memberOrder();
  const bool isRoot = reps.isMe && reps.rootHost == lay.host;
  if (!reps.isMe) {  // only the representative's recv is written
    red.reduce(ch, lay.local, inOrder, send, recv, count, type, op, reps.localIndex, tag);
    return;
  }
  // The root collects its host's sum in its recv; another representative in a scratch buffer.
  std::vector<char> scratch(isRoot ? 0 : count * dataTypeSize(type));
  void* hostSum = isRoot ? recv : scratch.data();
  red.reduce(ch, lay.local, inOrder, send, hostSum, count, type, op, reps.localIndex, tag);
  const RankGroup between(reps.ranks, lay.host);
  red.reduce(ch, between, inOrder, hostSum, recv, count, type, op, reps.rootHost, tag);
}

}  // namespace rcclx
