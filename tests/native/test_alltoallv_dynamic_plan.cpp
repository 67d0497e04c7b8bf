// rcclx_core/src/alltoallv_dynamic_plan.hpp: the check of a rank's send counts (negative,
// past the input, with and without offsets), the packed send offsets, and where received
// blocks land in a bounded output (exact fit, overflow in the middle, zeros, empty output).
#include <vector>

#include "alltoallv_dynamic_plan.hpp"
#include "check.hpp"

using rcclx::checkSendSplits;
using rcclx::overflowMessage;
using rcclx::placeRecvBlocks;
using rcclx::sendBlockOffsets;

TEST_CASE("alltoallv_dynamic plan: valid send counts pass, packed or at offsets") {
  const std::vector<int64_t> splits{2, 0, 3};
  CHECK_EQ(checkSendSplits(splits.data(), nullptr, 3, 5), "");
  const std::vector<int64_t> offsets{1, 3, 4};
  CHECK_EQ(checkSendSplits(splits.data(), offsets.data(), 3, 7), "");
  CHECK(sendBlockOffsets(splits.data(), nullptr, 3) == (std::vector<int64_t>{0, 2, 2}));
  CHECK(sendBlockOffsets(splits.data(), offsets.data(), 3) == offsets);
}

TEST_CASE("alltoallv_dynamic plan: bad send counts name the entry and the value") {
  const std::vector<int64_t> negative{1, -2};
  CHECK_EQ(checkSendSplits(negative.data(), nullptr, 2, 4),
           "input_split_sizes[1]=-2 is negative or more than the input's 4 rows");
  const std::vector<int64_t> tooMany{3, 2};
  CHECK_EQ(checkSendSplits(tooMany.data(), nullptr, 2, 4),
           "input_split_sizes add up to 5 rows by entry 1, more than the input's 4 rows");
  const std::vector<int64_t> offsets{0, 3};
  const std::vector<int64_t> two{1, 2};
  CHECK_EQ(checkSendSplits(two.data(), offsets.data(), 2, 4),
           "input_offsets[1]=3 with input_split_sizes[1]=2 ends past the input's 4 rows");
}

TEST_CASE("alltoallv_dynamic plan: blocks packed in rank order, exact capacity") {
  const auto pl = placeRecvBlocks({3, 0, 2}, 5);
  CHECK(pl.rows == (std::vector<int64_t>{3, 0, 2}));
  CHECK(pl.offsets == (std::vector<int64_t>{0, 3, 3}));
  CHECK_EQ(pl.overflowFrom, -1);
  CHECK_EQ(pl.totalRows, 5);
}

TEST_CASE("alltoallv_dynamic plan: overflow clips the first block that does not fit") {
  const auto pl = placeRecvBlocks({3, 3, 3}, 5);
  CHECK(pl.rows == (std::vector<int64_t>{3, 2, 0}));
  CHECK(pl.offsets == (std::vector<int64_t>{0, 3, 5}));
  CHECK_EQ(pl.overflowFrom, 1);
  CHECK_EQ(pl.overflowRows, 3);
  CHECK_EQ(pl.overflowAt, 3);
  CHECK_EQ(pl.totalRows, 9);
  CHECK_EQ(overflowMessage(pl, 2, 5),
           "alltoallv_dynamic: output overflow on rank 2: rank 1 sent 3 rows starting at row 3, "
           "but the output holds 5 rows (9 rows were sent to this rank in all; rows past the "
           "capacity were dropped)");
  const auto empty = placeRecvBlocks({0, 1}, 0);
  CHECK(empty.rows == (std::vector<int64_t>{0, 0}));
  CHECK_EQ(empty.overflowFrom, 1);
}
