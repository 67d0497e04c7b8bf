// Direct-ring allreduce: a flat reduce-scatter (each rank folds its block from every rank's
// input in the fold order), then a ring all-gather of the blocks. The same bytes per rank as the
// ring, but no partial sum travels: every element is folded once, from the inputs, in one order.
#include <algorithm>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void directRingAllReduce(Channels& ch, const RankGroup& g, const FoldOrder& order, const void* send,
                         void* recv, size_t count, DataType type, RedOp op, uint64_t tag) {
  const size_t elem = dataTypeSize(type);
  const int n = g.size();
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  // Rounds of one slot per member, as the ring's: the all-gather sends blocks the
  // reduce-scatter has just written, still in cache.
  const size_t roundElems = std::max<size_t>(1, ch.slotBytes() / elem) * n;
  std::vector<size_t> displs;
  size_t base = 0;
  do {  // at least one round, so a zero-count call still checks that peers agree
    const size_t len = std::min(roundElems, count - base);
    const std::vector<size_t> counts = evenBlocks(len, n, displs);
    char* round = out + base * elem;
    char* block = round + displs[g.index()] * elem;
    flatReduceScatterV(ch, g, order, in + base * elem, block, counts, displs, type, op, tag);
    ringAllGatherV(ch, g, block, round, counts, displs, elem, tag);
    base += len;
  } while (base < count);
}

}  // namespace rcclx
