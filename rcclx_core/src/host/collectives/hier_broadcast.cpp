// Hierarchical broadcast across hosts (collectives.hpp): the representatives (the root on its
// host, the leader on every other) carry the data between hosts in a chain; a chain inside each
// host spreads it from its representative.
#include "host/collectives/collectives.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {

void hierarchicalBroadcast(Channels& ch, const HostLayout& lay, const void* send, void* recv,
                           size_t bytes, int root, uint64_t tag) {
  const Representatives reps = representativesOf(lay, root);
  if (reps.isMe) {
    // The root's send reaches its own recv here (chainBroadcast copies it at the root).
    const RankGroup between(reps.ranks, lay.host);
    chainBroadcast(ch, between, send, recv, bytes, reps.rootHost, tag);
  }
  chainBroadcast(ch, lay.local, recv, recv, bytes, reps.localIndex, tag);
}

}  // namespace rcclx
