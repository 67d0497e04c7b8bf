// Tags that travel with every chunk: which operation it belongs to and what its ranks must pass
// alike, so that ranks calling different operations, in a different order or with different
// arguments get an error instead of corrupt data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ctran/checks.hpp"
#include "rcclx/types.hpp"

namespace rcclx {

/// The operations of a communicator (also used in logs and errors).
enum class OpKind : uint8_t {
  kSendRecv = 1,
  kAllReduce,
  kReduce,
  kBroadcast,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kBarrier,
  kAllToAllvDynamic,
};

const char* opKindName(OpKind kind);

/// What the ranks of a collective must pass alike besides its sizes (every chunk carries its
/// size on its own): the element type and operator of a reduction (a float32 sum on one rank
/// and an int32 sum or a float32 max on another move the same bytes), the root of a rooted call.
struct CallAgreement {
  std::optional<DataType> type;
  std::optional<RedOp> op;
  std::optional<int> root;
};

/// A chunk tag: the operation kind, its CallAgreement and, for collectives, its sequence number
/// on the communicator, modulo 2^32 (a chunk is only ever compared with the receiver's next
/// call; point-to-point traffic uses sequence 0: only the pair agrees on it). Roots are compared
/// modulo 65535.
uint64_t makeTag(OpKind kind, uint64_t seq, const CallAgreement& agreement = {});

/// The sequence number a tag carries.
inline uint64_t tagSeq(uint64_t tag) { return tag & 0xffffffffu; }

/// "all_reduce #12 (float32, sum)", "broadcast #3 (root 1)", "send/recv".
std::string describeTag(uint64_t tag);

/// A rank met a peer's chunk of another call (another collective, another place in the order).
/// What the peers sent it stays unread, so the communicator's channels no longer line up: the
/// host back-end reports it to every rank.
class MismatchedCalls : public ctran::InvalidUsage {
 public:
  using InvalidUsage::InvalidUsage;
};

/// A rank met a peer's chunk of the same call with another size, element type, operator or
/// root: as MismatchedCalls, reported to every rank.
class MismatchedArguments : public ctran::InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

/// Where rank `me` in the call tagged `mine` met rank `peer`'s tag `theirs`: throws unless they
/// are equal, MismatchedCalls when they are different calls, MismatchedArguments naming both
/// when the same call was made with other arguments.
void checkSameCall(uint64_t mine, uint64_t theirs, int me, int peer);

}  // namespace rcclx
