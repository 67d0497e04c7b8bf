// Flat reduce-scatter and reduce: each chunk goes straight to the rank that owns its result,
// which folds every rank's chunk in the fold order in one step (no partial sums on the way).
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {
namespace {

// One chunk's receive side: every other member's chunk of `len` elements, with this rank's own
// at `mine`, folded in `order` into `out`.
void reduceFromAll(Channels& ch, const RankGroup& g, const FoldOrder& order,
                   std::vector<const void*>& srcs, const char* mine, char* out, size_t len,
                   DataType type, RedOp op, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  const size_t elem = dataTypeSize(type);
  for (int p = 0; p < n; ++p)
    srcs[p] = p == r ? mine : ch.acquireRecv(g.rankAt(p), len * elem, tag);
  order.fold(out, srcs.data(), n, len, type, op);
  for (int p = 0; p < n; ++p) {
    if (p != r) ch.releaseRecv(g.rankAt(p));
  }
}

void sendChunk(Channels& ch, int peer, const char* src, size_t bytes, uint64_t tag) {
  void* dst = ch.acquireSend(peer);
  if (bytes > 0) std::memcpy(dst, src, bytes);
  ch.commitSend(peer, bytes, tag);
}

}  // namespace

void flatReduceScatterV(Channels& ch, const RankGroup& g, const FoldOrder& order, const void* send,
                        void* recv, const std::vector<size_t>& counts,
                        const std::vector<size_t>& displs, DataType type, RedOp op, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  const size_t elem = dataTypeSize(type);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  if (n == 1) {
    if (in + displs[0] * elem != out && counts[0])
      std::memmove(out, in + displs[0] * elem, counts[0] * elem);
    return;
  }
  const size_t chunkElems = ch.slotBytes() / elem;
  const size_t maxCount = *std::max_element(counts.begin(), counts.end());
  auto part = [&](int b, size_t c) {
    return counts[b] > c ? std::min(chunkElems, counts[b] - c) : 0;
  };
  std::vector<const void*> srcs(n);
  size_t c = 0;
  do {  // every rank sends every peer one chunk per round, empty past the end of its block
    for (int k = 1; k < n; ++k) {
      const int p = (r + k) % n;
      sendChunk(ch, g.rankAt(p), in + (displs[p] + c) * elem, part(p, c) * elem, tag);
    }
    reduceFromAll(ch, g, order, srcs, in + (displs[r] + c) * elem, out + c * elem, part(r, c), type,
                  op, tag);
    c += chunkElems;
  } while (c < maxCount);
}

void flatReduceScatterV(Channels& ch, const FoldOrder& order, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag) {
  flatReduceScatterV(ch, RankGroup::all(ch.rank(), ch.nranks()), order, send, recv, counts, displs,
                     type, op, tag);
}

void flatReduce(Channels& ch, const FoldOrder& order, const void* send, void* recv, size_t count,
                DataType type, RedOp op, int root, uint64_t tag) {
  const RankGroup all = RankGroup::all(ch.rank(), ch.nranks());
  const int n = all.size();
  const int r = all.index();
  const size_t elem = dataTypeSize(type);
  const char* in = static_cast<const char*>(send);
  if (n == 1) {
    if (send != recv && count) std::memcpy(recv, send, count * elem);
    return;
  }
  const size_t chunkElems = ch.slotBytes() / elem;
  std::vector<const void*> srcs(r == root ? n : 0);
  size_t done = 0;
  do {
    const size_t len = std::min(chunkElems, count - done);
    if (r != root) {
      sendChunk(ch, root, in + done * elem, len * elem, tag);
    } else {
      reduceFromAll(ch, all, order, srcs, in + done * elem, static_cast<char*>(recv) + done * elem,
                    len, type, op, tag);
    }
    done += len;
  } while (done < count);
}

}  // namespace rcclx
