// allToAllvDynamic's arithmetic, shared by the host back-end, the GPU kernel and the tests: a
// call as raw pointers (checked by the front door), the check of a rank's own send counts, and
// where the received blocks land in an output of bounded capacity. Counts and offsets are in
// rows. The inline functions compile for the host and, in GPU translation units, the device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RCCLX_A2AV_HOST_DEVICE __host__ __device__
#else
#define RCCLX_A2AV_HOST_DEVICE
#endif

namespace rcclx {

/// The first entry of a rank's send counts that is invalid for an input of `sendRows` rows
/// (negative, more than the input, or a block ending past it, packed or at `offsets`), or -1.
RCCLX_A2AV_HOST_DEVICE inline int firstBadSendEntry(const int64_t* splits, const int64_t* offsets,
                                                    int nranks, int64_t sendRows) {
  int64_t at = 0;
  for (int p = 0; p < nranks; ++p) {
    const int64_t s = splits[p];
    if (s < 0 || s > sendRows) return p;
    if (offsets != nullptr) {
      if (offsets[p] < 0 || offsets[p] > sendRows - s) return p;
    } else if ((at += s) > sendRows) {
      return p;
    }
  }
  return -1;
}

/// Where the block from rank `from` lands in an output of `capacity` rows, the blocks packed
/// in rank order: its first row `at`, the rows `kept` (clipped at the capacity), and `total`
/// rows sent in all. Negative counts (invalid senders) count as 0.
struct BlockPlace {
  int64_t at = 0;
  int64_t kept = 0;
  int64_t sent = 0;
  int64_t total = 0;
};
RCCLX_A2AV_HOST_DEVICE inline BlockPlace placeBlock(const int64_t* counts, int nranks, int from,
                                                    int64_t capacity) {
  BlockPlace b;
  for (int s = 0; s < nranks; ++s) {
    const int64_t c = counts[s] < 0 ? 0 : counts[s];
    if (s < from) b.at += c;
    b.total += c;
  }
  b.at = b.at < capacity ? b.at : capacity;
  b.sent = counts[from] < 0 ? 0 : counts[from];
  b.kept = b.sent < capacity - b.at ? b.sent : capacity - b.at;
  return b;
}

/// One allToAllvDynamic call, as the back-ends run it. Array pointers hold nranks int64s.
struct DynamicCall {
  const void* send = nullptr;
  void* recv = nullptr;
  size_t sendRows = 0;      ///< rows the input holds
  size_t capacityRows = 0;  ///< rows the output may hold
  size_t rowBytes = 0;
  const int64_t* sendSplits = nullptr;
  const int64_t* sendOffsets = nullptr;  ///< null: packed
  int64_t* recvSplits = nullptr;
  int64_t* recvOffsets = nullptr;  ///< null: not written
  bool recvSplitsKnown = false;
};

/// The row offset of each send block: sendOffsets, or the packed prefix sum.
std::vector<int64_t> sendBlockOffsets(const int64_t* splits, const int64_t* offsets, int nranks);

/// "" when rank `rank`'s send counts (and offsets) are valid for an input of `sendRows` rows,
/// else the error text, naming the entry and its value.
std::string checkSendSplits(const int64_t* splits, const int64_t* offsets, int nranks,
                            size_t sendRows);

/// Where the blocks from each rank land in an output of `capacityRows` rows.
struct RecvPlacement {
  std::vector<int64_t> rows;     ///< rows written from each rank (clipped at the capacity)
  std::vector<int64_t> offsets;  ///< where each block starts (exclusive prefix sum of rows)
  int overflowFrom = -1;         ///< the first rank whose block did not fit, or -1
  int64_t overflowRows = 0;      ///< its block's rows
  int64_t overflowAt = 0;        ///< the row its block started at
  int64_t totalRows = 0;         ///< rows sent to this rank in all
};

/// Packs `counts` (rows from each rank, all non-negative) into `capacityRows`.
RecvPlacement placeRecvBlocks(const std::vector<int64_t>& counts, size_t capacityRows);

/// The overflow error of receiver `rank` (placement.overflowFrom >= 0).
std::string overflowMessage(const RecvPlacement& placement, int rank, size_t capacityRows);

}  // namespace rcclx
