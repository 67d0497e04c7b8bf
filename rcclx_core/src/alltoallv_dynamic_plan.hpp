// allToAllvDynamic's arithmetic, shared by the host back-end and the tests: a call as raw
// pointers (checked by the front door), the check of a rank's own send counts, and where the
// received blocks land in an output of bounded capacity. Counts and offsets are in rows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace rcclx {

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
