// How dda_tree and dda_large cut a message: chunks of at most the arena's step, each cut into
// one slice per rank (the slice that rank folds). Slices start on 64-byte boundaries so ranks
// never share a cache line of results; the last ones may be shorter or empty.
#pragma once

#include <algorithm>
#include <cstddef>

namespace rcclx {

struct DdaChunk {
  size_t first = 0;  ///< the chunk's first element in the message
  size_t len = 0;    ///< its elements
  size_t slice = 0;  ///< elements per slice

  /// The chunk starting at element `first` of a `count`-element message of `elemBytes`
  /// elements, at most `chunkElems` long, among `nranks` ranks.
  static DdaChunk at(size_t first, size_t count, size_t chunkElems, int nranks, size_t elemBytes) {
    const size_t align = std::max<size_t>(1, 64 / elemBytes);
    DdaChunk c;
    c.first = first;
    c.len = std::min(chunkElems, count - first);
    c.slice = ((c.len + nranks - 1) / nranks + align - 1) / align * align;
    return c;
  }
  /// Rank p's slice: elements [lo(p), hi(p)) of the chunk.
  size_t lo(int p) const { return std::min(slice * p, len); }
  size_t hi(int p) const { return std::min(slice * (p + 1), len); }
  size_t sliceLen(int p) const { return hi(p) - lo(p); }
};

}  // namespace rcclx
