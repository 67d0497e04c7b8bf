// Low-precision reduce-scatter: quantize every block, send it to its owner, dequantize and sum
// in float32 in rank order (the owner's own block exactly), round once to the element type.
#include <algorithm>
#include <cstring>

#include "host/cpu/numeric.hpp"
#include "host/lp/lp_exchange.hpp"

namespace rcclx::lp {

void lpReduceScatterV(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                      void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, bool average,
                      uint64_t tag) {
  const int n = ch.nranks();
  const int r = ch.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunk = chunkElems(ch, q);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  const size_t rounds = roundsFor(*std::max_element(counts.begin(), counts.end()), chunk);
  float* acc = ws.acc.data();
  for (size_t c = 0; c < rounds; ++c) {
    auto part = [&](int p) { return chunkPart(counts[p], c, chunk); };
    const ChunkPart mine = part(r);
    sendToPeers(ch, tag, [&](int p, void* dst) {
      q.encode(in + (displs[p] + part(p).at) * elem, type, part(p).len, dst);
      return q.wireBytes(part(p).len);
    });
    receiveInRankOrder(
        ch, tag, in + (displs[r] + mine.at) * elem, [&](int) { return q.wireBytes(mine.len); },
        [&](int p, const void* seg) {
          if (p == r) {
            addOwnExact(seg, type, mine.len, acc, p == 0);
          } else {
            q.decodeAdd(seg, mine.len, acc, p == 0);
          }
        });
    if (average) {
      const float div = static_cast<float>(n);
      for (size_t i = 0; i < mine.len; ++i) acc[i] /= div;
    }
    // In place, this overwrites the input block this rank has just summed.
    if (type == DataType::kFloat32) {
      std::memcpy(out + mine.at * elem, acc, mine.len * elem);
    } else {
      auto* o = reinterpret_cast<uint16_t*>(out + mine.at * elem);
      for (size_t i = 0; i < mine.len; ++i) o[i] = cpu::floatToBf16(acc[i]);
    }
  }
}

}  // namespace rcclx::lp
