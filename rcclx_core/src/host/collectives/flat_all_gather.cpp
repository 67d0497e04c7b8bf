// Flat all-gather: one exchange in which every rank's block goes straight to every rank
// (transfer_plan.hpp), all moving at once.
#include "host/collectives/collectives.hpp"
#include "host/p2p/channels.hpp"

namespace rcclx {

void flatAllGatherV(Channels& ch, const void* send, void* recv, const std::vector<size_t>& counts,
                    const std::vector<size_t>& displs, size_t elem, uint64_t tag) {
  runExchange(ch, allGatherVExchange(ch.rank(), ch.nranks(), send, recv, counts, displs, elem),
              tag);
}

}  // namespace rcclx
