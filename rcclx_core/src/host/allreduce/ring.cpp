// Ring allreduce over point-to-point channels.
#include <algorithm>
#include <cstring>

#include "host/allreduce/allreduce.hpp"
#include "host/cpu/reduce.hpp"
#include "host/p2p/channels.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

void ringAllReduce(Channels& ch, const void* send, void* recv, size_t count, DataType type,
                   RedOp op, uint64_t tag) {
  ringAllReduce(ch, RankGroup::all(ch.rank(), ch.nranks()), send, recv, count, type, op, tag);
}

void ringAllReduce(Channels& ch, const RankGroup& g, const void* send, void* recv, size_t count,
                   DataType type, RedOp op, uint64_t tag) {
  const int n = g.size();
  const int r = g.index();
  const size_t elem = dataTypeSize(type);
  if (n == 1 || count == 0) {
    if (send != recv) std::memcpy(recv, send, count * elem);
    return;
  }
  const int next = g.after(1);
  const int prev = g.after(-1);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t chunkElems = ch.slotBytes() / elem;
  const size_t roundElems = chunkElems * n;

  for (size_t base = 0; base < count; base += roundElems) {
    const size_t roundCount = std::min(roundElems, count - base);
    const size_t seg = (roundCount + n - 1) / n;
    auto lo = [&](int j) { return base + std::min(seg * j, roundCount); };
    auto len = [&](int j) {
      return std::min(seg * (j + 1), roundCount) - std::min(seg * j, roundCount);
    };

    // Reduce-scatter: segment j starts at rank j and gains one input per hop; the rank before
    // j adds the last one, so rank r completes segment r+1.
    {
      int j = r;
      void* dst = ch.acquireSend(next);
      std::memcpy(dst, in + lo(j) * elem, len(j) * elem);
      ch.commitSend(next, len(j) * elem, tag);
    }
    for (int k = 1; k < n; ++k) {
      int j = (r - k + n) % n;
      const void* partial = ch.acquireRecv(prev, len(j) * elem, tag);
      if (k < n - 1) {
        void* dst = ch.acquireSend(next);
        cpu::reduce2(dst, partial, in + lo(j) * elem, len(j), type, op);
        ch.releaseRecv(prev);
        ch.commitSend(next, len(j) * elem, tag);
      } else {
        cpu::reduce2(out + lo(j) * elem, partial, in + lo(j) * elem, len(j), type, op);
        ch.releaseRecv(prev);
      }
    }
    // All-gather: forward each completed segment around the ring.
    {
      int j = (r + 1) % n;
      void* dst = ch.acquireSend(next);
      std::memcpy(dst, out + lo(j) * elem, len(j) * elem);
      ch.commitSend(next, len(j) * elem, tag);
    }
    for (int k = 1; k < n; ++k) {
      int j = (r + 1 - k + n) % n;
      const void* done = ch.acquireRecv(prev, len(j) * elem, tag);
      std::memcpy(out + lo(j) * elem, done, len(j) * elem);
      if (k < n - 1) {
        void* dst = ch.acquireSend(next);
        std::memcpy(dst, done, len(j) * elem);
        ch.commitSend(next, len(j) * elem, tag);
      }
      ch.releaseRecv(prev);
    }
  }
}

}  // namespace rcclx
