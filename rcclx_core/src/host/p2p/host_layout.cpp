// Implementation of host_layout.hpp.
#include "host/p2p/host_layout.hpp"

#include <algorithm>

namespace rcclx {

HostLayout HostLayout::from(const ctran::Topology& t) {
  HostLayout h;
  h.ranksOf.resize(t.nHosts);
  for (int r = 0; r < t.nranks; ++r) h.ranksOf[t.hostOf[r]].push_back(r);
  for (const auto& ranks : h.ranksOf) h.hostSizes.push_back(static_cast<int>(ranks.size()));
  h.host = t.hostOf[t.rank];
  const auto& mine = h.ranksOf[h.host];
  const int li = static_cast<int>(std::find(mine.begin(), mine.end(), t.rank) - mine.begin());
  h.local = RankGroup(mine, li);
  std::vector<int> rail, leaders;
  int railIndex = 0;
  for (int host = 0; host < t.nHosts; ++host) {
    const auto& ranks = h.ranksOf[host];
    leaders.push_back(ranks[0]);
    if (li < static_cast<int>(ranks.size())) {
      if (host == h.host) railIndex = static_cast<int>(rail.size());
      rail.push_back(ranks[li]);
    }
  }
  h.rail = RankGroup(std::move(rail), railIndex);
  h.leaders = RankGroup(std::move(leaders), h.host);
  h.even = std::all_of(h.hostSizes.begin(), h.hostSizes.end(),
                       [&](int n) { return n == h.hostSizes[0]; });
  return h;
}

Representatives representativesOf(const HostLayout& layout, int root) {
  Representatives reps;
  for (int host = 0; host < layout.nHosts(); ++host) {
    const auto& ranks = layout.ranksOf[host];
    const bool hasRoot = std::find(ranks.begin(), ranks.end(), root) != ranks.end();
    if (hasRoot) reps.rootHost = host;
    reps.ranks.push_back(hasRoot ? root : ranks[0]);
  }
  const auto& mine = layout.ranksOf[layout.host];
  const int rep = reps.ranks[layout.host];
  reps.localIndex = static_cast<int>(std::find(mine.begin(), mine.end(), rep) - mine.begin());
  reps.isMe = reps.localIndex == layout.local.index();
  return reps;
}

}  // namespace rcclx
