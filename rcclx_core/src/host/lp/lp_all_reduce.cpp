// Low-precision allreduce: quantize -> reduce-scatter (dequantize the peers' copies of this
// rank's shard, sum them and its own exact copy in float32 in rank order) -> requantize ->
// all-gather -> dequantize.
#include <algorithm>
#include <cstring>

#include "host/lp/lp_exchange.hpp"

namespace rcclx::lp {

size_t chunkElems(const Channels& ch, const Fp8BlockQuantizer& q) {
  return wireMaxElems(ch.slotBytes(), q.blockElems());
}

void lpAllReduce(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                 void* recv, size_t count, DataType type, bool average, uint64_t tag) {
  const int n = ch.nranks();
  const int r = ch.rank();
  const size_t elem = dataTypeSize(type);
  const size_t chunk = chunkElems(ch, q);
  const char* in = static_cast<const char*>(send);
  char* out = static_cast<char*>(recv);
  // Shard p: blocks [nb * p / n, nb * (p + 1) / n) of the whole buffer.
  const size_t nb = wireBlocks(count, q.blockElems());
  auto shardLo = [&](int p) { return std::min(nb * p / n * q.blockElems(), count); };
  size_t maxShard = 0;
  for (int p = 0; p < n; ++p) maxShard = std::max(maxShard, shardLo(p + 1) - shardLo(p));
  const size_t rounds = roundsFor(maxShard, chunk);
  float* acc = ws.acc.data();
  uint8_t* own = ws.wire.data();
  for (size_t c = 0; c < rounds; ++c) {
    // Shard p's chunk c: elements [start(p), start(p) + part(p).len) of the buffer.
    auto part = [&](int p) { return chunkPart(shardLo(p + 1) - shardLo(p), c, chunk); };
    auto start = [&](int p) { return shardLo(p) + part(p).at; };
    auto bytes = [&](int p) { return q.wireBytes(part(p).len); };
    const size_t mine = part(r).len;

    // Reduce-scatter: this rank's input of each peer's shard, to that peer; then every rank's
    // copy of this rank's shard, summed in rank order (this rank's own exactly).
    sendToPeers(ch, tag, [&](int p, void* dst) {
      q.encode(in + start(p) * elem, type, part(p).len, dst);
      return bytes(p);
    });
    receiveInRankOrder(
        ch, tag, in + start(r) * elem, [&](int) { return bytes(r); },
        [&](int p, const void* seg) {
          if (p == r) {
            addOwnExact(seg, type, mine, acc, p == 0);
          } else {
            q.decodeAdd(seg, mine, acc, p == 0);
          }
        });
    if (average) {
      const float div = static_cast<float>(n);
      for (size_t i = 0; i < mine; ++i) acc[i] /= div;
    }

    // All-gather: the requantized shard to every peer; every shard decoded from its bytes (this
    // rank's own too, so that every rank holds the same values).
    q.encode(acc, DataType::kFloat32, mine, own);
    sendToPeers(ch, tag, [&](int, void* dst) {
      std::memcpy(dst, own, bytes(r));
      return bytes(r);
    });
    receiveInRankOrder(ch, tag, own, bytes, [&](int p, const void* seg) {
      q.decode(seg, part(p).len, out + start(p) * elem, type);
    });
  }
}

}  // namespace rcclx::lp
