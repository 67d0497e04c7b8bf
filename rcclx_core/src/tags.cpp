// Implementation of tags.hpp. Layout, from the top bit: the kind (8 bits), the type + 1 and the
// operator + 1 (4 bits each; 0 when the call has none), the root modulo 65535, + 1 (16 bits),
// the sequence number (32 bits).
#include "tags.hpp"

namespace rcclx {
namespace {

constexpr int kKindShift = 56;
constexpr int kTypeShift = 52;
constexpr int kOpShift = 48;
constexpr int kRootShift = 32;
constexpr uint64_t kFieldMask4 = 0xf;
constexpr uint64_t kRootMask = 0xffff;
constexpr uint64_t kCallMask = (uint64_t{0xff} << kKindShift) | 0xffffffffu;  // kind, sequence

static_assert(kNumDataTypes < 16 && kNumRedOps < 16, "a type and an operator fit 4 bits each");

OpKind kindOf(uint64_t tag) { return static_cast<OpKind>(tag >> kKindShift); }

// "float32, sum, root 0": the CallAgreement a tag carries ("" when none).
std::string describeAgreement(uint64_t tag) {
  std::string args;
  auto add = [&](const std::string& part) { args += (args.empty() ? "" : ", ") + part; };
  if (const uint64_t type = (tag >> kTypeShift) & kFieldMask4) {
    add(dataTypeName(static_cast<DataType>(type - 1)));
  }
  if (const uint64_t op = (tag >> kOpShift) & kFieldMask4) {
    add(redOpName(static_cast<RedOp>(op - 1)));
  }
  if (const uint64_t root = (tag >> kRootShift) & kRootMask) {
    add(ctran::strCat("root ", root - 1));
  }
  return args;
}

}  // namespace

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

uint64_t makeTag(OpKind kind, uint64_t seq, const CallAgreement& agreement) {
  uint64_t tag = static_cast<uint64_t>(kind) << kKindShift;
  if (agreement.type) tag |= (static_cast<uint64_t>(*agreement.type) + 1) << kTypeShift;
  if (agreement.op) tag |= (static_cast<uint64_t>(*agreement.op) + 1) << kOpShift;
  if (agreement.root) {
    tag |= (static_cast<uint64_t>(*agreement.root) % kRootMask + 1) << kRootShift;
  }
  return tag | tagSeq(seq);
}

std::string describeTag(uint64_t tag) {
  std::string s = opKindName(kindOf(tag));
  if (kindOf(tag) == OpKind::kSendRecv) return s;
  s += ctran::strCat(" #", tagSeq(tag));
  const std::string args = describeAgreement(tag);
  return args.empty() ? s : s + " (" + args + ")";
}

void checkSameCall(uint64_t mine, uint64_t theirs, int me, int peer) {
  if (theirs == mine) return;
  if ((theirs & kCallMask) != (mine & kCallMask)) {
    throw MismatchedCalls(ctran::strCat(
        "mismatched calls: rank ", peer, " is in ", describeTag(theirs), " but rank ", me, " in ",
        describeTag(mine), " (do all ranks call the same collectives in the same order?)"));
  }
  throw MismatchedArguments(ctran::strCat(
      opKindName(kindOf(mine)), " #", tagSeq(mine), ": rank ", peer, " passed ",
      describeAgreement(theirs), " but rank ", me, " passed ", describeAgreement(mine),
      " (every rank must pass the same element type, operator and root)"));
}

}  // namespace rcclx
