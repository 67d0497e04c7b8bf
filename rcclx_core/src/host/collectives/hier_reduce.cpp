// Hierarchical reduce across hosts (collectives.hpp): a chain inside each host collects its
// sum at its representative (the root on its host, the leader on every other); a chain among
// the representatives carries the sums to the root.
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {

void hierarchicalReduce(Channels& ch, const HostLayout& lay, const void* send, void* recv,
                        size_t count, DataType type, RedOp op, int root, uint64_t tag) {
  const Representatives reps = representativesOf(lay, root);
  const bool isRoot = reps.isMe && reps.rootHost == lay.host;
  if (!reps.isMe) {  // only the representative's recv is written
    chainReduce(ch, lay.local, send, recv, count, type, op, reps.localIndex, tag);
    return;
  }
  // The root collects its host's sum in its recv; another representative in a scratch buffer.
  std::vector<char> scratch(isRoot ? 0 : count * dataTypeSize(type));
  void* hostSum = isRoot ? recv : scratch.data();
  chainReduce(ch, lay.local, send, hostSum, count, type, op, reps.localIndex, tag);
  const RankGroup between(reps.ranks, lay.host);
  chainReduce(ch, between, hostSum, recv, count, type, op, reps.rootHost, tag);
}

}  // namespace rcclx
