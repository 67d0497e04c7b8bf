// ncclRedOpCreatePreMulSum / ncclRedOpDestroy and the resolution of ncclRedOp_t values.
#include "redop.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "api.hpp"
#include "ctran/device.hpp"
#include "gpu.hpp"

namespace rcclx::nccl {
namespace {

template <typename T>
T load(const void* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// An IEEE-style binary float of `expBits` exponent and `manBits` mantissa bits, with
/// infinities and NaNs (float16, bfloat16, e5m2) or without (e4m3: only all-ones is NaN).
double decodeFloat(uint32_t bits, int expBits, int manBits, bool ieeeSpecials) {
  const bool negative = (bits >> (expBits + manBits)) & 1;
  const uint32_t e = (bits >> manBits) & ((1u << expBits) - 1);
  const uint32_t m = bits & ((1u << manBits) - 1);
  const int bias = (1 << (expBits - 1)) - 1;
  double v;
  if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - bias - manBits);
  } else if (ieeeSpecials && e == (1u << expBits) - 1) {
    v = m ? NAN : INFINITY;
  } else if (!ieeeSpecials && e == (1u << expBits) - 1 && m == (1u << manBits) - 1) {
    v = NAN;
  } else {
    v = std::ldexp(static_cast<double>(m | (1u << manBits)), static_cast<int>(e) - bias - manBits);
  }
  return negative ? -v : v;
}

}  // namespace

double scalarValue(const void* p, rcclx::DataType type) {
  using rcclx::DataType;
  switch (type) {
    case DataType::kInt8: return load<int8_t>(p);
    case DataType::kUint8: return load<uint8_t>(p);
    case DataType::kInt32: return load<int32_t>(p);
    case DataType::kUint32: return load<uint32_t>(p);
    case DataType::kInt64: return static_cast<double>(load<int64_t>(p));
    case DataType::kUint64: return static_cast<double>(load<uint64_t>(p));
    case DataType::kFloat16: return decodeFloat(load<uint16_t>(p), 5, 10, true);
    case DataType::kFloat32: return load<float>(p);
    case DataType::kFloat64: return load<double>(p);
    case DataType::kBfloat16: return decodeFloat(load<uint16_t>(p), 8, 7, true);
    case DataType::kFloat8E4M3: return decodeFloat(load<uint8_t>(p), 4, 3, false);
    case DataType::kFloat8E5M2: return decodeFloat(load<uint8_t>(p), 5, 2, true);
  }
  CTRAN_ASSERT(false, "unhandled datatype ", static_cast<int>(type));
  return 0;
}

ResolvedOp resolveOp(const ncclComm& comm, ncclRedOp_t op, rcclx::DataType type) {
  const int value = static_cast<int>(op);
  if (value >= 0 && value < ncclNumOps) return {static_cast<rcclx::RedOp>(value), 1.0};
  const size_t index = static_cast<size_t>(value) - ncclNumOps;
  CTRAN_CHECK(value >= ncclNumOps && index < comm.redOps.size() && comm.redOps[index].live,
              ctran::InvalidArgument, "op ", value,
              " is neither a built-in ncclRedOp_t (0-4) nor a live ncclRedOpCreatePreMulSum "
              "handle of this communicator");
  const PreMulSumOp& pre = comm.redOps[index];
  CTRAN_CHECK(pre.type == type, ctran::InvalidArgument, "op ", value, " was created for datatype ",
              rcclx::dataTypeName(pre.type), " but the call is on ", rcclx::dataTypeName(type));
  return {rcclx::RedOp::kPreMulSum, pre.scalar};
}

}  // namespace rcclx::nccl

using rcclx::nccl::boundary;
using rcclx::nccl::CommUse;

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar,
         ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  return boundary("ncclRedOpCreatePreMulSum", [&] {
    CommUse use(comm, false);
    CTRAN_CHECK(op != nullptr, ctran::InvalidArgument, "op is NULL");
    CTRAN_CHECK(scalar != nullptr, ctran::InvalidArgument, "scalar is NULL");
    CTRAN_CHECK(residence == ncclScalarDevice || residence == ncclScalarHostImmediate,
                ctran::InvalidArgument, "residence ", static_cast<int>(residence),
                " is neither ncclScalarDevice (0) nor ncclScalarHostImmediate (1)");
    const rcclx::DataType type = rcclx::checkDataType(datatype, "");
    // A device scalar is read now: the core takes the scalar by value per call (NCCL reads it
    // when the collective runs; the value must not change in between).
    alignas(8) unsigned char raw[8] = {};
    if (residence == ncclScalarDevice && ctran::device::pointerDevice(scalar) >= 0)
      rcclx::nccl::gpu::copyToHost(raw, scalar, rcclx::dataTypeSize(type));
    else
      std::memcpy(raw, scalar, rcclx::dataTypeSize(type));
    auto& ops = use.handle().redOps;
    size_t index = 0;
    while (index < ops.size() && ops[index].live) ++index;
    CTRAN_CHECK(index < static_cast<size_t>(ncclMaxRedOp - ncclNumOps), ctran::InvalidUsage,
                "too many live PreMulSum operators on this communicator");
    if (index == ops.size()) ops.emplace_back();
    ops[index] = {true, type, rcclx::nccl::scalarValue(raw, type)};
    *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(index));
  });
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  return boundary("ncclRedOpDestroy", [&] {
    CommUse use(comm, false);
    const int value = static_cast<int>(op);
    CTRAN_CHECK(value >= 0, ctran::InvalidArgument, "op ", value, " is not a ncclRedOp_t");
    CTRAN_CHECK(value >= ncclNumOps, ctran::InvalidArgument, "op ", value,
                " is a built-in operator; only ncclRedOpCreatePreMulSum handles are destroyed");
    auto& ops = use.handle().redOps;
    const size_t index = static_cast<size_t>(value - ncclNumOps);
    CTRAN_CHECK(index < ops.size() && ops[index].live, ctran::InvalidArgument, "op ", value,
                " is not a live ncclRedOpCreatePreMulSum handle of this communicator");
    ops[index].live = false;
  });
}
