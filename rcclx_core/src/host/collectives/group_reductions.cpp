// Implementation of group_reductions.hpp.
#include "host/collectives/group_reductions.hpp"

#include "host/allreduce/allreduce.hpp"
#include "host/collectives/collectives.hpp"

namespace rcclx {

void GroupReductions::reduceScatterV(Channels& ch, const RankGroup& g, const FoldOrder& order,
                                     const void* send, void* recv,
                                     const std::vector<size_t>& counts,
                                     const std::vector<size_t>& displs, DataType type, RedOp op,
                                     uint64_t tag) const {
  if (deterministic) {
    flatReduceScatterV(ch, g, order, send, recv, counts, displs, type, op, tag);
  } else {
    ringReduceScatterV(ch, g, send, recv, counts, displs, type, op, tag);
  }
}

void GroupReductions::reduce(Channels& ch, const RankGroup& g, const FoldOrder& order,
                             const void* send, void* recv, size_t count, DataType type, RedOp op,
                             int root, uint64_t tag) const {
  if (deterministic) {
    directReduce(ch, g, order, send, recv, count, type, op, root, tag);
  } else {
    chainReduce(ch, g, send, recv, count, type, op, root, tag);
  }
}

void GroupReductions::allReduce(Channels& ch, const RankGroup& g, const FoldOrder& order,
                                const void* send, void* recv, size_t count, DataType type, RedOp op,
                                uint64_t tag) const {
  if (deterministic) {
    directRingAllReduce(ch, g, order, send, recv, count, type, op, tag);
  } else {
    ringAllReduce(ch, g, send, recv, count, type, op, tag);
  }
}

}  // namespace rcclx
