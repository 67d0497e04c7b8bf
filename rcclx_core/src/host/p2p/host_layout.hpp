// HostLayout: a communicator's ranks grouped by host, as the hierarchical collectives walk them:
// this host's ranks, this rank's rail (the ranks of the same local index on every host that
// has one) and the hosts' leaders (local index 0). Built once, at communicator creation.
#pragma once

#include <vector>

#include "ctran/topology.hpp"
#include "host/p2p/rank_group.hpp"

namespace rcclx {

struct HostLayout {
  std::vector<int> hostSizes;                ///< ranks on each host, in host order
  std::vector<std::vector<int>> ranksOf;     ///< each host's ranks, ascending
  int host = 0;                              ///< this rank's host
  RankGroup local = RankGroup::all(0, 1);    ///< this host's ranks
  RankGroup rail = RankGroup::all(0, 1);     ///< this local index on every host (host order)
  RankGroup leaders = RankGroup::all(0, 1);  ///< every host's first rank (valid on leaders)
  bool even = true;                          ///< every host has as many ranks

  int nHosts() const { return static_cast<int>(hostSizes.size()); }
  bool isLeader() const { return local.index() == 0; }

  static HostLayout from(const ctran::Topology& topology);
};

/// The ranks that carry a rooted collective (broadcast, reduce) between hosts: the root on its
/// host, the leader on every other; as a group in host order, and this host's one as an
/// index into `layout.local`.
struct Representatives {
  std::vector<int> ranks;  ///< one per host
  int rootHost = 0;        ///< the root's host (the root's index in ranks)
  int localIndex = 0;      ///< this host's representative's index in layout.local
  bool isMe = false;       ///< this rank represents its host
};
Representatives representativesOf(const HostLayout& layout, int root);

}  // namespace rcclx
