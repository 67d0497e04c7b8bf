// Low-precision all-gather: this rank's block quantized once, sent to every peer, and every
// block (this rank's own too) decoded from its bytes.
#include <algorithm>
#include <cstring>

#include "host/lp/lp_exchange.hpp"

namespace rcclx::lp {

void lpAllGatherV(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                  void* recv, const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  DataType type, uint64_t tag) {
  const int r = ch.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunk = chunkElems(ch, q);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t rounds = roundsFor(*std::max_element(counts.begin(), counts.end()), chunk);
  uint8_t* own = ws.wire.data();
  for (size_t c = 0; c < rounds; ++c) {
    auto part = [&](int p) { return chunkPart(counts[p], c, chunk); };
    auto bytes = [&](int p) { return q.wireBytes(part(p).len); };
    const ChunkPart mine = part(r);
    q.encode(in + mine.at * elem, type, mine.len, own);
    sendToPeers(ch, tag, [&](int, void* dst) {
      std::memcpy(dst, own, bytes(r));
      return bytes(r);
    });
    // In place, block r's decoding overwrites the input chunk encoded above.
    receiveInRankOrder(ch, tag, own, bytes, [&](int p, const void* seg) {
      q.decode(seg, part(p).len, out + (displs[p] + part(p).at) * elem, type);
    });
  }
}

}  // namespace rcclx::lp
