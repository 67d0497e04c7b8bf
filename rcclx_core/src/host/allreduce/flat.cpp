// Flat allreduce over point-to-point channels: each chunk of every rank's input goes to every
// peer in one step, and every rank folds all of them in the fold order (identical bits).
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/channels.hpp"

namespace rcclx {

void flatAllReduce(Channels& ch, const FoldOrder& order, const void* send, void* recv, size_t count,
                   DataType type, RedOp op, uint64_t tag) {
  const int n = ch.nranks();
  const int r = ch.rank();
  const size_t elem = dataTypeSize(type);
  if (n == 1) {
    if (send != recv && count) std::memcpy(recv, send, count * elem);
    return;
  }
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t chunkElems = ch.slotBytes() / elem;
  std::vector<const void*> srcs(n);
  size_t done = 0;
  do {  // a zero-count call still sends one empty chunk, so peers check they agree
    const size_t len = std::min(chunkElems, count - done);
    const char* mine = in + done * elem;
    // Every send before any receive: a rank releases a chunk's slots only once it has all of
    // them, so sends never wait on a rank that waits on them.
    for (int k = 1; k < n; ++k) {
      const int p = (r + k) % n;
      std::memcpy(ch.acquireSend(p), mine, len * elem);
      ch.commitSend(p, len * elem, tag);
    }
    for (int p = 0; p < n; ++p) srcs[p] = p == r ? mine : ch.acquireRecv(p, len * elem, tag);
    order.fold(out + done * elem, srcs.data(), n, len, type, op);  // `out` may be `mine`
    for (int p = 0; p < n; ++p) {
      if (p != r) ch.releaseRecv(p);
    }
    done += len;
  } while (done < count);
}

}  // namespace rcclx
