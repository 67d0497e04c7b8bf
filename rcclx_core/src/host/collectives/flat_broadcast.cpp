// Flat broadcast: one exchange in which the root sends its buffer straight to every rank
// (transfer_plan.hpp).
#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"

namespace rcclx {

void flatBroadcast(Channels& ch, const void* send, void* recv, size_t bytes, int root,
                   uint64_t tag) {
  runExchange(ch, broadcastExchange(ch.rank(), ch.nranks(), root, send, recv, bytes), tag);
}

}  // namespace rcclx
