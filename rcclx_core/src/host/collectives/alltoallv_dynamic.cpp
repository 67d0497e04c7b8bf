// allToAllvDynamic on host buffers: the counts are read when the call runs (on the worker for
// an async call), exchanged with every peer, then the rows move as one grouped exchange.
// A rank whose own counts are invalid sends -1 instead, so every rank fails before any data
// moves; a receiver whose output is too small still takes every chunk (the channels require
// it), keeps what fits and fails after the exchange, so no peer is left waiting.
#include <cstring>
#include <memory>

#include "alltoallv_dynamic_plan.hpp"
#include "ctran/checks.hpp"
#include "host/collectives/collectives.hpp"

namespace rcclx {
namespace {

/// Every rank's count for this rank (its own included); -1 from a rank whose counts are
/// invalid.
std::vector<int64_t> exchangeCounts(Channels& ch, int rank, int nranks, const int64_t* mine,
                                    bool valid, uint64_t tag) {
  std::vector<int64_t> out(nranks, -1), in(nranks, 0);
  for (int p = 0; p < nranks; ++p) out[p] = valid ? mine[p] : -1;
  std::vector<P2POp> ops;
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) ops.push_back({true, p, reinterpret_cast<char*>(&out[p]), sizeof(int64_t)});
  }
  for (int p = 0; p < nranks; ++p) {
    if (p != rank) ops.push_back({false, p, reinterpret_cast<char*>(&in[p]), sizeof(int64_t)});
  }
  runP2PGroup(ch, ops, tag);
  in[rank] = out[rank];
  return in;
}

}  // namespace

void allToAllvDynamic(Channels& ch, int rank, int nranks, const DynamicCall& c, uint64_t tag) {
  const std::string bad = checkSendSplits(c.sendSplits, c.sendOffsets, nranks, c.sendRows);
  const std::vector<int64_t> counts =
      exchangeCounts(ch, rank, nranks, c.sendSplits, bad.empty(), tag);
  if (!bad.empty()) throw ctran::InvalidArgument(ctran::strCat("alltoallv_dynamic: ", bad));
  for (int p = 0; p < nranks; ++p) {
    CTRAN_CHECK(counts[p] >= 0, ctran::InvalidArgument, "alltoallv_dynamic: rank ", p,
                "'s input_split_sizes or input_offsets are invalid (its error says which)");
  }
  // With known receive counts the exchanged ones still travel (a few bytes per peer on the
  // host) so a wrong expectation is an error naming both numbers instead of a hang.
  std::string mismatch;
  for (int p = 0; p < nranks && c.recvSplitsKnown; ++p) {
    if (mismatch.empty() && c.recvSplits[p] != counts[p]) {
      mismatch = ctran::strCat("alltoallv_dynamic: output_split_sizes[", p, "]=", c.recvSplits[p],
                               " on rank ", rank, " (receive counts known) but rank ", p, " sends ",
                               counts[p], " rows");
    }
  }
  const RecvPlacement pl = placeRecvBlocks(counts, c.capacityRows);
  const std::vector<int64_t> sendAt = sendBlockOffsets(c.sendSplits, c.sendOffsets, nranks);
  const auto* in = static_cast<const char*>(c.send);
  auto* out = static_cast<char*>(c.recv);
  const size_t row = c.rowBytes;
  // A clipped block arrives whole into scratch; only its rows that fit are kept.
  std::vector<std::unique_ptr<char[]>> scratch(nranks);
  std::vector<P2POp> ops;
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    ops.push_back({true, p, const_cast<char*>(in + sendAt[p] * row),
                   static_cast<size_t>(c.sendSplits[p]) * row});
  }
  for (int p = 0; p < nranks; ++p) {
    if (p == rank) continue;
    const size_t bytes = static_cast<size_t>(counts[p]) * row;
    char* dst = out + pl.offsets[p] * row;
    if (pl.rows[p] < counts[p]) dst = (scratch[p] = std::make_unique<char[]>(bytes)).get();
    ops.push_back({false, p, dst, bytes});
  }
  if (pl.rows[rank] > 0) {
    std::memmove(out + pl.offsets[rank] * row, in + sendAt[rank] * row,
                 static_cast<size_t>(pl.rows[rank]) * row);
  }
  runP2PGroup(ch, ops, tag);
  for (int p = 0; p < nranks; ++p) {
    if (scratch[p] && pl.rows[p] > 0) {
      std::memcpy(out + pl.offsets[p] * row, scratch[p].get(),
                  static_cast<size_t>(pl.rows[p]) * row);
    }
  }
  if (!c.recvSplitsKnown) std::memcpy(c.recvSplits, pl.rows.data(), nranks * sizeof(int64_t));
  if (c.recvOffsets != nullptr) {
    std::memcpy(c.recvOffsets, pl.offsets.data(), nranks * sizeof(int64_t));
  }
  if (!mismatch.empty()) throw ctran::InvalidArgument(mismatch);
  if (pl.overflowFrom >= 0) {
    throw ctran::InvalidArgument(overflowMessage(pl, rank, c.capacityRows));
  }
}

}  // namespace rcclx
