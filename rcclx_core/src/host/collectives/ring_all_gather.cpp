// Ring all-gather (with per-rank block sizes): every block travels once around the ring.
#include <algorithm>
#include <cstring>

#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void ringAllGatherV(Channels& ch, const void* send, void* recv, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, size_t elem, uint64_t tag) {
  ringAllGatherV(ch, RankGroup::all(ch.rank(), ch.nranks()), send, recv, counts, displs, elem, tag);
}

void ringAllGatherV(Channels& ch, const RankGroup& g, const void* send, void* recv,
                    const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                    size_t elem, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  char* out = static_cast<char*>(recv);
  const char* mine = static_cast<const char*>(send);
  if (mine != out + displs[r] * elem && counts[r]) {
    std::memcpy(out + displs[r] * elem, mine, counts[r] * elem);
  }
  if (n == 1) return;
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
      void* dst = ch.acquireSend(next);
      std::memcpy(dst, mine + c * elem, part(r, c) * elem);
      ch.commitSend(next, part(r, c) * elem, tag);
    }
    for (int k = 1; k < n; ++k) {
      int b = (r - k + n) % n;
      size_t len = part(b, c);
      const void* in = ch.acquireRecv(prev, len * elem, tag);
      std::memcpy(out + (displs[b] + c) * elem, in, len * elem);
      if (k < n - 1) {
        void* dst = ch.acquireSend(next);
        std::memcpy(dst, in, len * elem);
        ch.commitSend(next, len * elem, tag);
      }
      ch.releaseRecv(prev);
    }
    c += chunkElems;
  } while (c < maxCount);
}

}  // namespace rcclx
