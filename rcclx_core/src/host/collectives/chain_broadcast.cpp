// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, one slot-sized chunk at a time.
#include <algorithm>
#include <cstring>

#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void chainBroadcast(Channels& ch, const void* send, void* recv, size_t bytes, int root,
                    uint64_t tag) {
  chainBroadcast(ch, RankGroup::all(ch.rank(), ch.nranks()), send, recv, bytes, root, tag);
}

void chainBroadcast(Channels& ch, const RankGroup& g, const void* send, void* recv, size_t bytes,
                    int root, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  char* out = static_cast<char*>(recv);
  if (r == root && send != recv && bytes) std::memcpy(recv, send, bytes);
  if (n == 1) return;
  const int pos = (r - root + n) % n;  // 0 at the root
  const int next = g.after(1);
  const int prev = g.after(-1);
  const bool last = pos == n - 1;
  const char* src = static_cast<const char*>(r == root ? send : recv);
  size_t off = 0;
  do {  // a zero-byte broadcast still sends one empty chunk, so peers check they agree
    size_t len = std::min(ch.slotBytes(), bytes - off);
    if (pos == 0) {
      void* dst = ch.acquireSend(next);
      std::memcpy(dst, src + off, len);
      ch.commitSend(next, len, tag);
    } else {
      const void* in = ch.acquireRecv(prev, len, tag);
      std::memcpy(out + off, in, len);
      if (!last) {
        void* dst = ch.acquireSend(next);
        std::memcpy(dst, in, len);
        ch.commitSend(next, len, tag);
      }
      ch.releaseRecv(prev);
    }
    off += len;
  } while (off < bytes);
}

}  // namespace rcclx
