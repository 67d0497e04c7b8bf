// DDA tree allreduce: reduce-scatter by direct loads, then all-gather by direct loads.
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/allreduce/dda_chunk.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/direct/direct_arena.hpp"

namespace rcclx {

void ddaTreeAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                      size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag) {
  const int n = arena.nranks();
  const int r = arena.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunkElems = std::min(chunkBytes, arena.slotBytes()) / elem;
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  std::vector<const void*> srcs(n);
  size_t done = 0;
  do {
    const DdaChunk c = DdaChunk::at(done, count, chunkElems, n, elem);
    uint64_t s = arena.beginStep(tag, c.len * elem);
    std::memcpy(arena.input(s), in + done * elem, c.len * elem);
    arena.publish(0, s);
    arena.waitPeers(0, s);
    for (int p = 0; p < n; ++p) srcs[p] = arena.peerInput(p, s) + c.lo(r) * elem;
    order.fold(arena.result(s) + c.lo(r) * elem, srcs.data(), n, c.sliceLen(r), type, op);
    arena.publish(1, s);
    arena.waitPeers(1, s);
    for (int i = 0; i < n; ++i) {
      int p = (r + i) % n;
      std::memcpy(out + (done + c.lo(p)) * elem, arena.peerResult(p, s) + c.lo(p) * elem,
                  c.sliceLen(p) * elem);
    }
    arena.endStep(s);
    done += c.len;
  } while (done < count);
}

}  // namespace rcclx
