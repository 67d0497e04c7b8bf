// DDA tree allreduce: reduce-scatter by direct loads, then all-gather by direct loads.
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/direct/direct_arena.hpp"

namespace rcclx {

void ddaTreeAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                      size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag) {
  const int n = arena.nranks();
  const int r = arena.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunkElems = std::min(chunkBytes, arena.slotBytes()) / elem;
  // Slices start on 64-byte boundaries so ranks never share a cache line of results.
  const size_t align = std::max<size_t>(1, 64 / elem);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  std::vector<const void*> srcs(n);
  size_t done = 0;
  do {
    const size_t len = std::min(chunkElems, count - done);
    const size_t slice = ((len + n - 1) / n + align - 1) / align * align;
    auto lo = [&](int p) { return std::min(slice * p, len); };
    auto hi = [&](int p) { return std::min(slice * (p + 1), len); };

    uint64_t s = arena.beginStep(tag, len * elem);
    std::memcpy(arena.input(s), in + done * elem, len * elem);
    arena.publish(0, s);
    arena.waitPeers(0, s);
    for (int p = 0; p < n; ++p) srcs[p] = arena.peerInput(p, s) + lo(r) * elem;
    order.fold(arena.result(s) + lo(r) * elem, srcs.data(), n, hi(r) - lo(r), type, op);
    arena.publish(1, s);
    arena.waitPeers(1, s);
    for (int i = 0; i < n; ++i) {
      int p = (r + i) % n;
      std::memcpy(out + (done + lo(p)) * elem, arena.peerResult(p, s) + lo(p) * elem,
                  (hi(p) - lo(p)) * elem);
    }
    arena.endStep(s);
    done += len;
  } while (done < count);
}

}  // namespace rcclx
