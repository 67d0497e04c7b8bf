// DDA large allreduce: the direct-load reduce-scatter and all-gather of dda_tree, cut to the
// bytes each rank must move, and pipelined over the arena's two slots.
//
// Per chunk, rank r publishes only the slices of its input that the peers fold (not slice r),
// folds slice r from its own input and the peers' published slices, writes the result once
// where every rank loads it, then copies the other ranks' results: (5n - 2) / n bytes moved per
// byte of message, against the ring's 7(n - 1) / n. The next chunk's slices are published
// between this chunk's fold and its gather, so a rank waits for its peers' results only after
// doing the work it has that needs none of them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "host/allreduce/allreduce.hpp"
#include "host/allreduce/dda_chunk.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/direct/direct_arena.hpp"

namespace rcclx {

void ddaLargeAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                       size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag) {
  const int n = arena.nranks();
  const int r = arena.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunkElems = std::min(chunkBytes, arena.slotBytes()) / elem;
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  std::vector<const void*> srcs(n);

  struct Chunk : DdaChunk {
    uint64_t step = 0;
  };
  auto chunkAt = [&](size_t first) {
    return Chunk{DdaChunk::at(first, count, chunkElems, n, elem)};
  };
  // Stages the peers' slices of chunk `c` (never slice r: this rank folds it from its input).
  auto publishInput = [&](Chunk& c) {
    c.step = arena.beginStep(tag, c.len * elem);
    for (int i = 1; i < n; ++i) {
      const int p = (r + i) % n;
      std::memcpy(arena.input(c.step) + c.lo(p) * elem, in + (c.first + c.lo(p)) * elem,
                  c.sliceLen(p) * elem);
    }
    arena.publish(0, c.step);
  };

  Chunk cur = chunkAt(0);
  publishInput(cur);
  for (;;) {
    arena.waitPeers(0, cur.step);
    for (int p = 0; p < n; ++p) {
      srcs[p] = p == r ? in + (cur.first + cur.lo(r)) * elem
                       : arena.peerInput(p, cur.step) + cur.lo(r) * elem;
    }
    char* mine = arena.result(cur.step) + cur.lo(r) * elem;
    order.fold(mine, srcs.data(), n, cur.sliceLen(r), type, op);
    arena.publish(1, cur.step);
    // In place, this chunk's input is no longer read here (the peers' slices are staged, slice
    // r is folded): its result may go to out now.
    std::memcpy(out + (cur.first + cur.lo(r)) * elem, mine, cur.sliceLen(r) * elem);
    const size_t nextFirst = cur.first + cur.len;
    const bool more = nextFirst < count;
    Chunk next{};
    if (more) {
      next = chunkAt(nextFirst);
      publishInput(next);
    }
    arena.waitPeers(1, cur.step);
    for (int i = 1; i < n; ++i) {
      const int p = (r + i) % n;
      std::memcpy(out + (cur.first + cur.lo(p)) * elem,
                  arena.peerResult(p, cur.step) + cur.lo(p) * elem, cur.sliceLen(p) * elem);
    }
    arena.endStep(cur.step);
    if (!more) break;
    cur = next;
  }
}

}  // namespace rcclx
