// Ring reduce-scatter (with per-rank block sizes): block b starts at rank b+1 and is complete
// at rank b after n-1 hops, each hop adding that rank's input.
#include <algorithm>
#include <cstring>

#include "host/collectives/collectives.hpp"
#include "host/cpu/reduce.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void ringReduceScatterV(Channels& ch, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag) {
  ringReduceScatterV(ch, RankGroup::all(ch.rank(), ch.nranks()), send, recv, counts, displs, type,
                     op, tag);
}

void ringReduceScatterV(Channels& ch, const RankGroup& g, const void* send, void* recv,
                        const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                        DataType type, RedOp op, uint64_t tag) {
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
  const int next = g.after(1);
  const int prev = g.after(-1);
  const size_t chunkElems = ch.slotBytes() / elem;
  const size_t maxCount = *std::max_element(counts.begin(), counts.end());
  auto part = [&](int b, size_t c) {
    return counts[b] > c ? std::min(chunkElems, counts[b] - c) : 0;
  };
  size_t c = 0;
  do {
    {
      int b = (r + n - 1) % n;
      void* dst = ch.acquireSend(next);
      if (part(b, c) > 0) {
        std::memcpy(dst, in + (displs[b] + c) * elem, part(b, c) * elem);
      }
      ch.commitSend(next, part(b, c) * elem, tag);
    }
    for (int k = 1; k < n; ++k) {
      int b = (r - k - 1 + 2 * n) % n;
      size_t len = part(b, c);
      const void* partial = ch.acquireRecv(prev, len * elem, tag);
      const char* mine = in + (displs[b] + c) * elem;
      if (k < n - 1) {
        void* dst = ch.acquireSend(next);
        cpu::reduce2(dst, partial, mine, len, type, op);
        ch.commitSend(next, len * elem, tag);
      } else {
        cpu::reduce2(out + c * elem, partial, mine, len, type, op);
      }
      ch.releaseRecv(prev);
    }
    c += chunkElems;
  } while (c < maxCount);
}

}  // namespace rcclx
