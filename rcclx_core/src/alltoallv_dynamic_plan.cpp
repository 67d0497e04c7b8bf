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
  int64_t at = 0;
  for (int p = 0; p < nranks; ++p) {
    if (splits[p] < 0 || splits[p] > rows) {
      return ctran::strCat("input_split_sizes[", p, "]=", splits[p],
                           " is negative or more than the input's ", rows, " rows");
    }
    if (offsets != nullptr) {
      if (offsets[p] < 0 || offsets[p] > rows - splits[p]) {
        return ctran::strCat("input_offsets[", p, "]=", offsets[p], " with input_split_sizes[", p,
                             "]=", splits[p], " ends past the input's ", rows, " rows");
      }
      continue;
    }
    at += splits[p];
    if (at > rows) {
      return ctran::strCat("input_split_sizes add up to ", at, " rows by entry ", p,
                           ", more than the input's ", rows, " rows");
    }
  }
  return {};
}

RecvPlacement placeRecvBlocks(const std::vector<int64_t>& counts, size_t capacityRows) {
  const auto cap = static_cast<int64_t>(std::min<size_t>(capacityRows, INT64_MAX));
  RecvPlacement out;
  out.rows.resize(counts.size());
  out.offsets.resize(counts.size());
  int64_t at = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    const int64_t room = std::max<int64_t>(0, cap - at);
    out.offsets[p] = at;
    out.rows[p] = std::min(counts[p], room);
    if (out.rows[p] < counts[p] && out.overflowFrom < 0) {
      out.overflowFrom = static_cast<int>(p);
      out.overflowRows = counts[p];
      out.overflowAt = at;
    }
    at += out.rows[p];
    out.totalRows += counts[p];
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
