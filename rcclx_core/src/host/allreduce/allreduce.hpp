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

/// Ring reduce-scatter then ring all-gather over point-to-point channels: bandwidth-optimal,
/// works across hosts. Each segment is reduced once, in ring order, then forwarded.
void ringAllReduce(Channels& channels, const void* send, void* recv, size_t count, DataType type,
                   RedOp op, uint64_t tag);

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
