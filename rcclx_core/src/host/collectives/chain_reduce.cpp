// Pipelined chain reduce: root+1 -> root+2 -> ... -> root, each hop adding its input.
#include <algorithm>
#include <cstring>

#include "host/collectives/collectives.hpp"
#include "host/cpu/reduce.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void chainReduce(Channels& ch, const void* send, void* recv, size_t count, DataType type, RedOp op,
                 int root, uint64_t tag) {
  chainReduce(ch, RankGroup::all(ch.rank(), ch.nranks()), send, recv, count, type, op, root, tag);
}

void chainReduce(Channels& ch, const RankGroup& g, const void* send, void* recv, size_t count,
                 DataType type, RedOp op, int root, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  const size_t elem = dataTypeSize(type);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  if (n == 1) {
    if (send != recv && count) std::memcpy(recv, send, count * elem);
    return;
  }
  const int pos = (r - root - 1 + 2 * n) % n;  // 0 at root+1, n-1 at the root
  const int next = g.after(1);
  const int prev = g.after(-1);
  const size_t chunkElems = ch.slotBytes() / elem;
  size_t done = 0;
  do {
    size_t len = std::min(chunkElems, count - done);
    const char* mine = in + done * elem;
    if (pos == 0) {
      void* dst = ch.acquireSend(next);
      if (len > 0) {
        std::memcpy(dst, mine, len * elem);
      }
      ch.commitSend(next, len * elem, tag);
    } else {
      const void* partial = ch.acquireRecv(prev, len * elem, tag);
      if (pos < n - 1) {
        void* dst = ch.acquireSend(next);
        cpu::reduce2(dst, partial, mine, len, type, op);
        ch.commitSend(next, len * elem, tag);
      } else {
        cpu::reduce2(out + done * elem, partial, mine, len, type, op);
      }
      ch.releaseRecv(prev);
    }
    done += len;
  } while (done < count);
}

}  // namespace rcclx
