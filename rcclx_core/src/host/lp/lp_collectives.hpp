// The low-precision collectives on host memory, one per file, over the point-to-point channels
// (so they run wherever the channels do: shared memory on one host, tcp between hosts).
//
// Each works in rounds: in round c every rank quantizes chunk c of each block it sends straight
// into the channel slot toward its destination (one wire segment, lp_wire_format.hpp, of at
// most chunkElems() elements, a whole number of quantizer blocks), then receives one chunk from
// every peer in rank order. Blocks are laid from the start of every per-rank segment, so the
// bytes on the wire, and the results, do not depend on the chunking. Every element that crosses
// a link passes through the quantizer (in all_gather and all_to_all this rank's own block too,
// so that every rank holds the same values); a reduction adds the summing rank's own
// contribution exactly, since quantizing it would cost error and save no bytes:
//   all_gather / all_to_all:  out = D(Q(x))                                  (one quantization)
//   reduce_scatter, rank s:   out = round(sum_r (r == s ? x_r : D(Q(x_r))) [/ n])       (one)
//   all_reduce, shard of s:   out = D(Q(sum_r (r == s ? x_r : D(Q(x_r))) [/ n]))        (two)
// with D(Q(.)) the quantizer's round trip, the sums in float32 in rank order 0..n-1 and AVG
// dividing the float32 sum by n. all_reduce's shard s is blocks [nb s / n, nb (s + 1) / n) of
// the whole buffer, summed by rank s and decoded from the same bytes by every rank, so its
// result is the same on every rank and for any chunking. Inputs are
// float32 or bfloat16; every function handles count 0 and works in place (recv == send, or for
// reduce_scatter / all_gather recv's own block == send), as the full-precision versions do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "rcclx/types.hpp"

namespace rcclx {
class Channels;
}

namespace rcclx::lp {

class Fp8BlockQuantizer;

/// Host scratch of one communicator's low-precision calls: a float32 accumulator and one wire
/// segment, each of one chunk.
struct LpWorkspace {
  explicit LpWorkspace(size_t slotBytes) : acc(slotBytes), wire(slotBytes) {}
  std::vector<float> acc;
  std::vector<uint8_t> wire;
};

/// Elements per chunk: the most whole blocks whose segment fits one channel slot (0: none fits).
size_t chunkElems(const Channels& ch, const Fp8BlockQuantizer& q);

void lpAllReduce(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                 void* recv, size_t count, DataType type, bool average, uint64_t tag);

/// send holds block p (counts[p] elements) at displs[p]; this rank's reduced block goes to recv.
void lpReduceScatterV(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                      void* recv, const std::vector<size_t>& counts,
                      const std::vector<size_t>& displs, DataType type, bool average, uint64_t tag);

/// recv holds block p (counts[p] elements) at displs[p]; this rank's block comes from send.
void lpAllGatherV(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                  void* recv, const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  DataType type, uint64_t tag);

/// Block p of send (countPerRank elements) goes to rank p, into its block rank().
void lpAllToAll(Channels& ch, const Fp8BlockQuantizer& q, LpWorkspace& ws, const void* send,
                void* recv, size_t countPerRank, DataType type, uint64_t tag);

}  // namespace rcclx::lp
