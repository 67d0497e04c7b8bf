// Hierarchical allreduce across hosts: split rail when every host has as many ranks, leader-based
// otherwise (allreduce.hpp). Each level is a ring or chain of the channels among a RankGroup.
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {
namespace {

// Reduce-scatter inside the host, allreduce of this rank's block along its rail, all-gather
// inside the host. Blocks split `count` as evenly as possible (the first count % L one longer),
// so every rail carries the same count on every host.
void railAllReduce(Channels& ch, const HostLayout& lay, const void* send, void* recv, size_t count,
                   DataType type, RedOp op, uint64_t tag) {
  const int L = lay.local.size();
  const size_t elem = dataTypeSize(type);
  std::vector<size_t> counts(L), displs(L);
  size_t at = 0;
  for (int i = 0; i < L; ++i) {
    counts[i] = count / L + (static_cast<size_t>(i) < count % L ? 1 : 0);
    displs[i] = at;
    at += counts[i];
  }
  const int j = lay.local.index();
  char* block = static_cast<char*>(recv) + displs[j] * elem;
  ringReduceScatterV(ch, lay.local, send, block, counts, displs, type, op, tag);
  ringAllReduce(ch, lay.rail, block, block, counts[j], type, op, tag);
  ringAllGatherV(ch, lay.local, block, recv, counts, displs, elem, tag);
}

// Chain reduce to the host's leader, the leaders' ring, chain broadcast from the leader.
void leaderAllReduce(Channels& ch, const HostLayout& lay, const void* send, void* recv,
                     size_t count, DataType type, RedOp op, uint64_t tag) {
  chainReduce(ch, lay.local, send, recv, count, type, op, 0, tag);
  if (lay.isLeader()) ringAllReduce(ch, lay.leaders, recv, recv, count, type, op, tag);
  chainBroadcast(ch, lay.local, recv, recv, count * dataTypeSize(type), 0, tag);
}

}  // namespace

void hierarchicalAllReduce(Channels& ch, const HostLayout& lay, const void* send, void* recv,
                           size_t count, DataType type, RedOp op, uint64_t tag) {
  if (lay.even) {
    railAllReduce(ch, lay, send, recv, count, type, op, tag);
  } else {
    leaderAllReduce(ch, lay, send, recv, count, type, op, tag);
  }
}

}  // namespace rcclx
