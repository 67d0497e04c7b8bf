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
class FoldOrder;
class RankGroup;
struct GroupReductions;
struct HostLayout;

/// Ring reduce-scatter then ring all-gather over point-to-point channels: bandwidth-optimal,
/// works across hosts. Each segment is reduced once, in ring order starting where the segment
/// does, then forwarded (runs only when reductions need not be deterministic).
void ringAllReduce(Channels& channels, const void* send, void* recv, size_t count, DataType type,
                   RedOp op, uint64_t tag);
/// The ring among the ranks of `group` only (the others do not take part).
void ringAllReduce(Channels& channels, const RankGroup& group, const void* send, void* recv,
                   size_t count, DataType type, RedOp op, uint64_t tag);

/// Direct ring: a flat reduce-scatter (each rank folds its block from every rank's input in
/// `order`), then a ring all-gather. What "ring" runs when reductions are deterministic.
void directRingAllReduce(Channels& channels, const RankGroup& group, const FoldOrder& order,
                         const void* send, void* recv, size_t count, DataType type, RedOp op,
                         uint64_t tag);

/// Flat: every rank sends each chunk of its input to every peer over the channels, then folds
/// all ranks' chunks in `order`. One step per chunk, n - 1 copies of the input sent; works
/// across hosts; for small messages.
void flatAllReduce(Channels& channels, const FoldOrder& order, const void* send, void* recv,
                   size_t count, DataType type, RedOp op, uint64_t tag);

/// Hierarchical, across hosts. Every host with as many ranks ("split rail"): a reduce-scatter
/// inside each host leaves local rank j with block j summed over its host; the ranks of local
/// index j allreduce that block across hosts; a ring all-gather inside each host completes it.
/// Hosts of uneven sizes (leader-based): a reduce to each host's first rank, the leaders'
/// allreduce, a chain broadcast inside each host. Each level reduces through `reductions`, so
/// every rank holds the same bits (and, deterministic, the fold order's).
void hierarchicalAllReduce(Channels& channels, const HostLayout& layout,
                           const GroupReductions& reductions, const void* send, void* recv,
                           size_t count, DataType type, RedOp op, uint64_t tag);

/// The DDA algorithms run in steps of `chunkBytes` (at most the arena's slot).
///
/// DDA flat: every rank stages its input, then loads every rank's staged input and folds all
/// of them locally in `order`. One synchronisation per chunk; for small messages.
void ddaFlatAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                      size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag);

/// DDA tree: every rank stages its input; rank r folds slice r of all inputs (direct loads,
/// in `order`) into its result region; then every rank copies all result slices. Two
/// synchronisations per chunk, 1/n of the reduction work per rank; for medium messages.
void ddaTreeAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                      size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag);

/// DDA large: dda_tree's two phases moving only what each rank needs. Each rank stages only
/// the slices its peers fold, folds its own slice (in `order`) from its input and theirs, and
/// copies the others' results; the next chunk is staged while the peers fold this one. Fewer
/// bytes per rank than the ring ((5n - 2) / n per message byte against 7(n - 1) / n); for
/// large messages.
void ddaLargeAllReduce(DirectArena& arena, const FoldOrder& order, const void* send, void* recv,
                       size_t count, DataType type, RedOp op, size_t chunkBytes, uint64_t tag);

}  // namespace rcclx
