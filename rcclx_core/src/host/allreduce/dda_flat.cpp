// DDA flat allreduce: stage, then every rank folds every rank's staged input.
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/direct/direct_arena.hpp"

namespace rcclx {

void ddaFlatAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                      size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag) {
  const int n = arena.nranks();
  const size_t elem = dataTypeSize(type);
  const size_t chunkElems = std::min(chunkBytes, arena.slotBytes()) / elem;
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  std::vector<const void*> srcs(n);
  size_t done = 0;
  do {  // at least one step, so a zero-count call still checks that peers agree
    const size_t len = std::min(chunkElems, count - done);
    uint64_t s = arena.beginStep(tag, len * elem);
    std::memcpy(arena.input(s), in + done * elem, len * elem);
    arena.publish(0, s);
    arena.waitPeers(0, s);
    for (int p = 0; p < n; ++p) srcs[p] = arena.peerInput(p, s);
    order.fold(out + done * elem, srcs.data(), n, len, type, op);
    arena.endStep(s);
    done += len;
  } while (done < count);
}

}  // namespace rcclx
