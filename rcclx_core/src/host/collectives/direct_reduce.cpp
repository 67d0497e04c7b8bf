// Direct reduce: a flat reduce-scatter of even blocks (each member folds its block from every
// member's input in the fold order), then every block sent to the root. Each element is folded
// once, by one rank, from the original inputs: the result does not depend on the chain or ring
// a partial sum would have travelled.
#include <cstring>
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

std::vector<size_t> evenBlocks(size_t count, int n, std::vector<size_t>& displs) {
  std::vector<size_t> counts(n);
  displs.assign(n, 0);
  size_t at = 0;
  for (int i = 0; i < n; ++i) {
    counts[i] = count / n + (static_cast<size_t>(i) < count % n ? 1 : 0);
    displs[i] = at;
    at += counts[i];
  }
  return counts;
}

void directReduce(Channels& ch, const RankGroup& g, const FoldOrder& order, const void* send,
                  void* recv, size_t count, DataType type, RedOp op, int root, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  const size_t elem = dataTypeSize(type);
  if (n == 1) {
    if (send != recv && count) std::memcpy(recv, send, count * elem);
    return;
  }
  std::vector<size_t> displs;
  const std::vector<size_t> counts = evenBlocks(count, n, displs);
  // The root folds its block in place in recv; the others into a block of their own (only the
  // root's recv is written).
  std::vector<char> own(r == root ? 0 : counts[r] * elem);
  char* block = r == root ? static_cast<char*>(recv) + displs[r] * elem : own.data();
  flatReduceScatterV(ch, g, order, send, block, counts, displs, type, op, tag);
  std::vector<P2POp> ops;
  if (r != root) {
    if (counts[r] > 0) ops.push_back({true, g.rankAt(root), block, counts[r] * elem});
  } else {
    for (int p = 0; p < n; ++p) {
      if (p == r || counts[p] == 0) continue;
      ops.push_back(
          {false, g.rankAt(p), static_cast<char*>(recv) + displs[p] * elem, counts[p] * elem});
    }
  }
  runP2PGroup(ch, ops, tag);
}

}  // namespace rcclx
