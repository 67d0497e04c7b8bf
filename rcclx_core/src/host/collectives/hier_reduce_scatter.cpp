// Hierarchical reduce-scatter across hosts (collectives.hpp). The input is first packed in the
// order the level below walks it, so each level is one reduction over contiguous blocks (through
// GroupReductions; a host's ranks and the hosts are groups in fold order).
#include <cstring>
#include <vector>

#include "host/collectives/collectives.hpp"
#include "host/collectives/group_reductions.hpp"
#include "host/cpu/fold_order.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {
namespace {

// Blocks of `ranks` (in that order) copied from `in` to `packed` at `at`; returns their count.
size_t packBlocks(const std::vector<int>& ranks, const char* in, char* packed, size_t at,
                  const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  size_t elem) {
  size_t n = 0;
  for (int b : ranks) {
    if (counts[b] > 0)
      std::memcpy(packed + (at + n) * elem, in + displs[b] * elem, counts[b] * elem);
    n += counts[b];
  }
  return n;
}

void prefix(const std::vector<size_t>& counts, std::vector<size_t>& displs) {
  size_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    displs[i] = at;
    at += counts[i];
  }
}

// Split rail: packed by local index (rail), then host; the host's reduce-scatter leaves local
// rank j with its rail's blocks summed over the host; the rail's finishes this rank's block.
void railReduceScatter(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                       const char* in, void* recv, const std::vector<size_t>& counts,
                       const std::vector<size_t>& displs, size_t total, DataType type, RedOp op,
                       uint64_t tag) {
  const size_t elem = dataTypeSize(type);
  const int L = lay.local.size(), H = lay.nHosts(), me = lay.local.index();
  std::vector<char> packed(total * elem);
  std::vector<size_t> pc(L), pd(L), rc(H), rd(H);
  std::vector<int> rail(H);
  size_t at = 0;
  for (int i = 0; i < L; ++i) {
    for (int h = 0; h < H; ++h) rail[h] = lay.ranksOf[h][i];
    pc[i] = packBlocks(rail, in, packed.data(), at, counts, displs, elem);
    at += pc[i];
  }
  prefix(pc, pd);
  for (int h = 0; h < H; ++h) rc[h] = counts[lay.ranksOf[h][me]];
  prefix(rc, rd);
  std::vector<char> partial(pc[me] * elem);
  const FoldOrder inOrder = FoldOrder::memberOrder();
  red.reduceScatterV(ch, lay.local, inOrder, packed.data(), partial.data(), pc, pd, type, op, tag);
  red.reduceScatterV(ch, lay.rail, inOrder, partial.data(), recv, rc, rd, type, op, tag);
}

// Leader-based: packed by host; a reduce to the leader; the leaders' reduce-scatter of their
// hosts' blocks; the leader sends each of its ranks its block.
void leaderReduceScatter(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                         const char* in, void* recv, const std::vector<size_t>& counts,
                         const std::vector<size_t>& displs, size_t total, DataType type, RedOp op,
                         uint64_t tag) {
  const size_t elem = dataTypeSize(type);
  const int H = lay.nHosts();
  const auto& mine = lay.ranksOf[lay.host];
  std::vector<char> packed(total * elem);
  std::vector<size_t> hc(H), hd(H);
  size_t at = 0;
  for (int h = 0; h < H; ++h) {
    hc[h] = packBlocks(lay.ranksOf[h], in, packed.data(), at, counts, displs, elem);
    at += hc[h];
  }
  prefix(hc, hd);
  const FoldOrder inOrder = FoldOrder::memberOrder();
  std::vector<P2POp> ops;
  if (!lay.isLeader()) {
    // Only the root's recv is written: the packed input serves as the others'.
    red.reduce(ch, lay.local, inOrder, packed.data(), packed.data(), total, type, op, 0, tag);
    const size_t bytes = counts[mine[lay.local.index()]] * elem;
    if (bytes > 0) ops.push_back({false, mine[0], static_cast<char*>(recv), bytes});
    runP2PGroup(ch, ops, tag);
    return;
  }
  std::vector<char> hostSum(total * elem), mineSum(hc[lay.host] * elem);
  red.reduce(ch, lay.local, inOrder, packed.data(), hostSum.data(), total, type, op, 0, tag);
  red.reduceScatterV(ch, lay.leaders, inOrder, hostSum.data(), mineSum.data(), hc, hd, type, op,
                     tag);
  size_t off = counts[mine[0]];
  if (off > 0) std::memcpy(recv, mineSum.data(), off * elem);
  for (size_t q = 1; q < mine.size(); ++q) {
    const size_t c = counts[mine[q]];
    if (c > 0) ops.push_back({true, mine[q], mineSum.data() + off * elem, c * elem});
    off += c;
  }
  runP2PGroup(ch, ops, tag);
}

}  // namespace

void hierarchicalReduceScatterV(Channels& ch, const HostLayout& lay, const GroupReductions& red,
                                const void* send, void* recv, const std::vector<size_t>& counts,
                                const std::vector<size_t>& displs, DataType type, RedOp op,
                                uint64_t tag) {
  size_t total = 0;
  for (size_t c : counts) total += c;
  const char* in = static_cast<const char*>(send);
  if (lay.even) {
    railReduceScatter(ch, lay, red, in, recv, counts, displs, total, type, op, tag);
  } else {
    leaderReduceScatter(ch, lay, red, in, recv, counts, displs, total, type, op, tag);
  }
}

}  // namespace rcclx
