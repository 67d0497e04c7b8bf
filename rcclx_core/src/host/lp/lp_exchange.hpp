// One round of a low-precision collective's exchange: a chunk to every peer, then a chunk from
// every rank in rank order. Shared by the lp_*.cpp algorithms.
//
// Deadlock freedom: every rank sends all of a phase's chunks before receiving any, and receives
// a phase's chunks only after sending them, so a send waits at most for a peer to consume a
// chunk of an earlier phase, which that peer does once it has sent that earlier phase.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "host/cpu/numeric.hpp"
#include "host/lp/lp_collectives.hpp"
#include "host/p2p/channels.hpp"
#include "lp/fp8_block_quantizer.hpp"
#include "lp/lp_wire_format.hpp"

namespace rcclx::lp {

/// Sends one chunk to every peer, nearest first: fill(peer, dst) writes it into the slot and
/// returns its bytes.
template <typename Fill>
void sendToPeers(Channels& ch, uint64_t tag, Fill&& fill) {
  const int n = ch.nranks();
  const int r = ch.rank();
  for (int i = 1; i < n; ++i) {
    const int p = (r + i) % n;
    void* dst = ch.acquireSend(p);
    ch.commitSend(p, fill(p, dst), tag);
  }
}

/// Receives one chunk from every rank in rank order 0..n-1 and calls consume(p, segment);
/// `own` stands for this rank's chunk. bytes(p) is the size rank p's chunk must have.
template <typename Bytes, typename Consume>
void receiveInRankOrder(Channels& ch, uint64_t tag, const void* own, Bytes&& bytes,
                        Consume&& consume) {
  const int n = ch.nranks();
  const int r = ch.rank();
  for (int p = 0; p < n; ++p) {
    if (p == r) {
      consume(p, own);
      continue;
    }
    consume(p, ch.acquireRecv(p, bytes(p), tag));
    ch.releaseRecv(p);
  }
}

/// Adds this rank's own contribution to the shard it sums, exactly (acc = x when `first`, else
/// acc + x, in float32): it never crosses a link, so quantizing it would add error and no
/// saving. The result stays a function of the inputs alone, the same bits on every rank.
inline void addOwnExact(const void* src, DataType type, size_t count, float* acc, bool first) {
  if (type == DataType::kFloat32) {
    const auto* x = static_cast<const float*>(src);
    for (size_t i = 0; i < count; ++i) acc[i] = first ? x[i] : acc[i] + x[i];
  } else {
    const auto* x = static_cast<const uint16_t*>(src);
    for (size_t i = 0; i < count; ++i) {
      const float v = cpu::bf16ToFloat(x[i]);
      acc[i] = first ? v : acc[i] + v;
    }
  }
}

/// The part of a block of `count` elements that round c carries: [at, at + len) relative to the
/// block's start (len 0 once the block is done).
struct ChunkPart {
  size_t at;
  size_t len;
};
inline ChunkPart chunkPart(size_t count, size_t round, size_t chunk) {
  const size_t at = std::min(count, round * chunk);
  return {at, std::min(chunk, count - at)};
}

/// Rounds needed for blocks of at most `maxCount` elements (at least one, so that a call of
/// zero elements still checks that the peers agree).
inline size_t roundsFor(size_t maxCount, size_t chunk) {
  return std::max<size_t>(1, (maxCount + chunk - 1) / chunk);
}

}  // namespace rcclx::lp
