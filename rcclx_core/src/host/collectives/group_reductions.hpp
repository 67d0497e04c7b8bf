// GroupReductions: the one choice between reductions whose every element is folded once, from
// the inputs, in the fold order (deterministic: the same bits whatever the size, algorithm or
// collective; the default) and today's pipelined forms, where partial sums travel along a ring
// or chain and each element's order depends on where its segment starts (RCCLX_DETERMINISTIC=0).
// The ring, chain and hierarchical algorithms reduce through it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rcclx/types.hpp"

namespace rcclx {

class Channels;
class FoldOrder;
class RankGroup;

struct GroupReductions {
  bool deterministic = true;

  /// reduce_scatter_v among `group`: counts and displs indexed by member.
  void reduceScatterV(Channels& ch, const RankGroup& group, const FoldOrder& order,
                      const void* send, void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, RedOp op,
                      uint64_t tag) const;
  /// reduce to the member `root` (only its recv is written).
  void reduce(Channels& ch, const RankGroup& group, const FoldOrder& order, const void* send,
              void* recv, size_t count, DataType type, RedOp op, int root, uint64_t tag) const;
  /// allreduce among `group`.
  void allReduce(Channels& ch, const RankGroup& group, const FoldOrder& order, const void* send,
                 void* recv, size_t count, DataType type, RedOp op, uint64_t tag) const;
};

}  // namespace rcclx
