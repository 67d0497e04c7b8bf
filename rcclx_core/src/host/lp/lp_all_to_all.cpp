// Low-precision all-to-all: each destination's block quantized straight into its channel slot,
// every received block (and this rank's block to itself) decoded from its bytes.
#include "host/lp/lp_exchange.hpp"

namespace rcclx::lp {

void lpAllToAll(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                void* recv, size_t countPerRank, DataType type, uint64_t tag) {
  const int r = ch.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunk = chunkElems(ch, q);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t rounds = roundsFor(countPerRank, chunk);
  uint8_t* own = ws.wire.data();
  for (size_t c = 0; c < rounds; ++c) {
    const ChunkPart part = chunkPart(countPerRank, c, chunk);
    const size_t bytes = q.wireBytes(part.len);
    auto at = [&](int p) { return (p * countPerRank + part.at) * elem; };
    // Every input chunk of this round is encoded before any output chunk of it is written, so
    // the exchange also works in place (recv == send).
    sendToPeers(ch, tag, [&](int p, void* dst) {
      q.encode(in + at(p), type, part.len, dst);
      return bytes;
    });
    q.encode(in + at(r), type, part.len, own);
    receiveInRankOrder(
        ch, tag, own, [&](int) { return bytes; },
        [&](int p, const void* seg) { q.decode(seg, part.len, out + at(p), type); });
  }
}

}  // namespace rcclx::lp
