// runExchange: a transfer list (transfer_plan.hpp) on host buffers: this rank's own block is
// copied, every send and receive progressed together (runP2PGroup).
#include <cstring>

#include "host/collectives/collectives.hpp"

namespace rcclx {

void runExchange(Channels& ch, const Exchange& exchange, uint64_t tag) {
  std::vector<P2POp> ops;
  ops.reserve(exchange.size());
  for (const Transfer& t : exchange) {
    switch (t.kind) {
      case Transfer::kSelf:
        if (t.bytes > 0 && t.dst != t.src) std::memmove(t.dst, t.src, t.bytes);
        break;
      case Transfer::kSend:
        ops.push_back({true, t.peer, const_cast<char*>(static_cast<const char*>(t.src)), t.bytes});
        break;
      case Transfer::kRecv:
        ops.push_back({false, t.peer, static_cast<char*>(t.dst), t.bytes});
        break;
    }
  }
  runP2PGroup(ch, ops, tag);
}

}  // namespace rcclx
