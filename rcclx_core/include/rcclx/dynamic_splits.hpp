// DynamicSplits: the split-size arrays of Communicator::allToAllvDynamic, an all-to-all-v whose
// counts live where the data lives (on the GPU for GPU buffers), so the host never reads them.
#pragma once

#include <cstddef>
#include <limits>

#include "rcclx/buffer.hpp"

namespace rcclx {

/// The counts and offsets of one allToAllvDynamic call, in rows of `rowElems` elements. Every
/// array holds size() int64 entries and lives with the data (host or the communicator's GPU).
struct DynamicSplits {
  /// Read: rows this rank sends to each peer, block p packed in peer order or at sendOffsets[p].
  Buffer sendSplits;
  /// Written: rows received from each peer (clipped to the capacity on overflow). With
  /// recvSplitsKnown it is read instead: the rows each peer sends (the count exchange skipped).
  Buffer recvSplits;
  /// Read, optional (data null: packed): the row where block p starts in the input.
  Buffer sendOffsets;
  /// Written, optional (data null: not written): the row where block p starts in the output,
  /// the exclusive prefix sum of recvSplits.
  Buffer recvOffsets;
  /// Elements per row (a token's hidden size); the buffers' counts are multiples of it.
  size_t rowElems = 1;
  /// Rows the output may hold at most (also bounded by its size).
  size_t maxRecvRows = std::numeric_limits<size_t>::max();
  /// The caller already knows the receive counts (recvSplits is an input).
  bool recvSplitsKnown = false;
};

}  // namespace rcclx
