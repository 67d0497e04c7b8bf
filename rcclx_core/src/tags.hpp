// Tags that travel with every chunk: which operation it belongs to, so that ranks calling
// different operations (or in a different order) get an error instead of corrupt data.
#pragma once

#include <cstdint>
#include <string>

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

/// A chunk tag: the operation kind and, for collectives, its sequence number on the
/// communicator (point-to-point traffic uses sequence 0: only the pair agrees on it).
inline uint64_t makeTag(OpKind kind, uint64_t seq) {
  return (static_cast<uint64_t>(kind) << 56) | (seq & ((uint64_t{1} << 56) - 1));
}

/// "all_reduce #12", "send/recv".
std::string describeTag(uint64_t tag);

}  // namespace rcclx
