// The allreduce algorithms on host memory, one per file. Each computes
// recv[i] = op over ranks of send[i], identical bits on every rank; send may equal recv.
// AVG and PREMUL_SUM arrive here already lowered to SUM by the caller (see communicator.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "rcclx/types.hpp"

namespace rcclx {

class Channels;
class DirectArena;
class RankGroup;
struct HostLayout;

/// Ring reduce-scatter then ring all-gather over point-to-point channels: bandwidth-optimal,
/// works across hosts. Each segment is reduced once, in ring order, then forwarded.
void ringAllReduce(Channels& channels, const void* send, void* recv, size_t count, DataType type,
                   RedOp op, uint64_t tag);
/// The ring among the ranks of `group` only (the others do not take part).
void ringAllReduce(Channels& channels, const RankGroup& group, const void* send, void* recv,
                   size_t count, DataType type, RedOp op, uint64_t tag);

/// Flat: every rank sends each chunk of its input to every peer over the channels, then reduces
/// all ranks' chunks in rank order. One step per chunk, n - 1 copies of the input sent; works
/// across hosts; for small messages.
void flatAllReduce(Channels& channels, const void* send, void* recv, size_t count, DataType type,
                   RedOp op, uint64_t tag);

/// Hierarchical, across hosts. Every host with as many ranks ("split rail"): a ring
/// reduce-scatter inside each host leaves local rank j with block j summed over its host; the
/// ranks of local index j ring-allreduce that block across hosts; a ring all-gather inside each
/// host completes it. Hosts of uneven sizes (leader-based): a chain reduce to each host's first
/// rank, the leaders' ring, a chain broadcast inside each host. Each element is reduced once,
/// so every rank holds the same bits.
void hierarchicalAllReduce(Channels& channels, const HostLayout& layout, const void* send,
                           void* recv, size_t count, DataType type, RedOp op, uint64_t tag);

/// DDA flat: every rank stages its input, then loads every rank's staged input and reduces
/// all of them locally in rank order. One synchronisation per chunk; for small messages.
void ddaFlatAllReduce(DirectArena& arena, const void* send, void* recv, size_t count, DataType type,
                      RedOp op, uint64_t tag);

/// DDA tree: every rank stages its input; rank r reduces slice r of all inputs (direct loads,
/// rank order) into its result region; then every rank copies all result slices. Two
/// synchronisations per chunk, 1/n of the reduction work per rank; for medium messages.
void ddaTreeAllReduce(DirectArena& arena, const void* send, void* recv, size_t count, DataType type,
                      RedOp op, uint64_t tag);

}  // namespace rcclx
