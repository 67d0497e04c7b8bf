// Implementation of tags.hpp.
#include "tags.hpp"

namespace rcclx {

const char* opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kSendRecv: return "send/recv";
    case OpKind::kAllReduce: return "all_reduce";
    case OpKind::kReduce: return "reduce";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kAllGather: return "all_gather";
    case OpKind::kReduceScatter: return "reduce_scatter";
    case OpKind::kAllToAll: return "all_to_all";
    case OpKind::kGather: return "gather";
    case OpKind::kScatter: return "scatter";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kAllToAllvDynamic: return "alltoallv_dynamic";
  }
  return "unknown operation";
}

std::string describeTag(uint64_t tag) {
  auto kind = static_cast<OpKind>(tag >> 56);
  uint64_t seq = tag & ((uint64_t{1} << 56) - 1);
  std::string s = opKindName(kind);
  if (kind != OpKind::kSendRecv) s += " #" + std::to_string(seq);
  return s;
}

}  // namespace rcclx
