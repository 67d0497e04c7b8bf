// FoldOrder: the one order in which a reduction combines the ranks' inputs, so every element's
// result has the same bits whatever the message size, offset, algorithm or collective.
//
// Ranks on one host: a left fold in rank order, widened (16- and 8-bit floats to float) and
// rounded once. Ranks on several hosts: each host's ranks folded that way and rounded to the
// element type, then the hosts' results folded in host order and rounded once. Algorithms that
// reduce through sub-groups (one host, or one rank per host) fold them in member order, which is
// the same thing level by level.
#pragma once

#include <cstddef>
#include <vector>

#include "rcclx/types.hpp"

namespace rcclx {

struct HostLayout;

class FoldOrder {
 public:
  /// The members of a group combined in member order (one host's ranks, or one rank per host
  /// in host order).
  static FoldOrder memberOrder() { return FoldOrder(); }
  /// A communicator's ranks, grouped by the hosts of `layout`.
  static FoldOrder of(const HostLayout& layout);

  /// dst[i] = the fold of srcs[0][i], ..., srcs[n-1][i], srcs indexed by member (rank). `dst`
  /// may be one of the sources.
  void fold(void* dst, const void* const* srcs, int n, size_t count, DataType type, RedOp op) const;

 private:
  FoldOrder() = default;

  // Each host's ranks, hosts in host order; empty when the whole group is one run.
  std::vector<std::vector<int>> runs_;
};

}  // namespace rcclx
