// Implementation of alltoallv_dynamic_plan.hpp.
#include "alltoallv_dynamic_plan.hpp"

#include <algorithm>

#include "ctran/checks.hpp"

namespace rcclx {

std::vector<int64_t> sendBlockOffsets(const int64_t* splits, const int64_t* offsets, int nranks) {
  std::vector<int64_t> o(nranks, 0);
  for (int p = 0; p < nranks; ++p) {
    o[p] = offsets != nullptr ? offsets[p] : (p == 0 ? 0 : o[p - 1] + splits[p - 1]);
  }
  return o;
}

std::string checkSendSplits(const int64_t* splits, const int64_t* offsets, int nranks,
                            size_t sendRows) {
  const auto rows = static_cast<int64_t>(sendRows);
  const int p = firstBadSendEntry(splits, offsets, nranks, rows);
  if (p < 0) return {};
  if (splits[p] < 0 || splits[p] > rows) {
    return ctran::strCat("input_split_sizes[", p, "]=", splits[p],
                         " is negative or more than the input's ", rows, " rows");
  }
  if (offsets != nullptr) {
    return ctran::strCat("input_offsets[", p, "]=", offsets[p], " with input_split_sizes[", p,
                         "]=", splits[p], " ends past the input's ", rows, " rows");
  }
  int64_t at = 0;
  for (int q = 0; q <= p; ++q) at += splits[q];
  return ctran::strCat("input_split_sizes add up to ", at, " rows by entry ", p,
                       ", more than the input's ", rows, " rows");
}

RecvPlacement placeRecvBlocks(const std::vector<int64_t>& counts, size_t capacityRows) {
  const auto cap = static_cast<int64_t>(std::min<size_t>(capacityRows, INT64_MAX));
  const int n = static_cast<int>(counts.size());
  RecvPlacement out;
  out.rows.resize(n);
  out.offsets.resize(n);
  for (int p = 0; p < n; ++p) {
    const BlockPlace b = placeBlock(counts.data(), n, p, cap);
    out.offsets[p] = b.at;
    out.rows[p] = b.kept;
    out.totalRows = b.total;
    if (b.kept < b.sent && out.overflowFrom < 0) {
      out.overflowFrom = p;
      out.overflowRows = b.sent;
      out.overflowAt = b.at;
    }
  }
  return out;
}

std::string overflowMessage(const RecvPlacement& pl, int rank, size_t capacityRows) {
  return ctran::strCat("alltoallv_dynamic: output overflow on rank ", rank, ": rank ",
                       pl.overflowFrom, " sent ", pl.overflowRows, " rows starting at row ",
                       pl.overflowAt, ", but the output holds ", capacityRows, " rows (",
                       pl.totalRows,
                       " rows were sent to this rank in all; rows past the capacity were "
                       "dropped)");
}

}  // namespace rcclx
