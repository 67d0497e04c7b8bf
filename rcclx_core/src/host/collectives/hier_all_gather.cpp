// Hierarchical all-gather across hosts (collectives.hpp): each phase is one exchange of blocks
// (runP2PGroup) among the ranks of one level, so a block crosses between two hosts once.
#include <cstring>

#include "host/collectives/collectives.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {
namespace {

// Collects the messages of one phase. Zero-length blocks are left out on both sides (every
// rank knows every count), and messages to or from one peer are matched in the order added.
struct Phase {
  char* base;
  const std::vector<size_t>& counts;
  const std::vector<size_t>& displs;
  size_t elem;
  std::vector<P2POp> ops;

  void send(int peer, int block) { add(true, peer, block); }
  void recv(int peer, int block) { add(false, peer, block); }
  void add(bool isSend, int peer, int block) {
    const size_t bytes = counts[block] * elem;
    if (bytes > 0) ops.push_back({isSend, peer, base + displs[block] * elem, bytes});
  }
};

// Split rail: the rail's blocks across hosts, then inside the host every rank's rail blocks.
void railAllGather(Channels& ch, const HostLayout& lay, Phase& ph, uint64_t tag) {
  const int me = lay.local.index();
  const int self = lay.ranksOf[lay.host][me];
  for (int m = 0; m < lay.rail.size(); ++m) {
    const int peer = lay.rail.rankAt(m);  // block b belongs to rank b
    if (peer == self) continue;
    ph.send(peer, self);
    ph.recv(peer, peer);
  }
  runP2PGroup(ch, ph.ops, tag);
  ph.ops.clear();
  for (int q = 0; q < lay.local.size(); ++q) {
    if (q == me) continue;
    const int peer = lay.local.rankAt(q);
    for (int h = 0; h < lay.nHosts(); ++h) {
      ph.send(peer, lay.ranksOf[h][me]);
      ph.recv(peer, lay.ranksOf[h][q]);
    }
  }
  runP2PGroup(ch, ph.ops, tag);
}

// Leader-based: gather to the leader, the leaders exchange their hosts' blocks, the leader
// sends each of its ranks every block but that rank's own.
void leaderAllGather(Channels& ch, const HostLayout& lay, Phase& ph, int nranks, uint64_t tag) {
  const auto& mine = lay.ranksOf[lay.host];
  const int leader = mine[0];
  if (!lay.isLeader()) {
    ph.send(leader, mine[lay.local.index()]);
    runP2PGroup(ch, ph.ops, tag);
    ph.ops.clear();
    for (int b = 0; b < nranks; ++b) {
      if (b != mine[lay.local.index()]) ph.recv(leader, b);
    }
    runP2PGroup(ch, ph.ops, tag);
    return;
  }
  for (size_t q = 1; q < mine.size(); ++q) ph.recv(mine[q], mine[q]);
  runP2PGroup(ch, ph.ops, tag);
  ph.ops.clear();
  for (int h = 0; h < lay.nHosts(); ++h) {
    if (h == lay.host) continue;
    const int other = lay.leaders.rankAt(h);
    for (int b : mine) ph.send(other, b);
    for (int b : lay.ranksOf[h]) ph.recv(other, b);
  }
  runP2PGroup(ch, ph.ops, tag);
  ph.ops.clear();
  for (size_t q = 1; q < mine.size(); ++q) {
    for (int b = 0; b < nranks; ++b) {
      if (b != mine[q]) ph.send(mine[q], b);
    }
  }
  runP2PGroup(ch, ph.ops, tag);
}

}  // namespace

void hierarchicalAllGatherV(Channels& ch, const HostLayout& lay, const void* send, void* recv,
                            const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                            size_t elem, uint64_t tag) {
  const int me = lay.ranksOf[lay.host][lay.local.index()];
  char* out = static_cast<char*>(recv);
  if (counts[me] > 0 && out + displs[me] * elem != send)
    std::memcpy(out + displs[me] * elem, send, counts[me] * elem);
  Phase ph{out, counts, displs, elem, {}};
  if (lay.even) {
    railAllGather(ch, lay, ph, tag);
  } else {
    leaderAllGather(ch, lay, ph, static_cast<int>(counts.size()), tag);
  }
}

}  // namespace rcclx
