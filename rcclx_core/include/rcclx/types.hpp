// Element types and reduction operators, numbered as NCCL numbers them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rcclx {

/// Element type of a buffer (values equal ncclDataType_t).
enum class DataType : int {
  kInt8 = 0,
  kUint8 = 1,
  kInt32 = 2,
  kUint32 = 3,
  kInt64 = 4,
  kUint64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBfloat16 = 9,
  kFloat8E4M3 = 10,  ///< OCP e4m3 (finite-only, max 448)
  kFloat8E5M2 = 11,  ///< OCP e5m2 (IEEE-like, with infinities)
};
constexpr int kNumDataTypes = 12;

/// Reduction operator (the first five equal ncclRedOp_t; the rest are RCCLX extensions).
enum class RedOp : int {
  kSum = 0,
  kProd = 1,
  kMax = 2,
  kMin = 3,
  kAvg = 4,
  kPreMulSum = 5,  ///< each rank multiplies its input by its own scalar, then SUM
  kBitAnd = 6,     ///< integers only
  kBitOr = 7,      ///< integers only
  kBitXor = 8,     ///< integers only
};
constexpr int kNumRedOps = 9;

/// Bytes per element.
size_t dataTypeSize(DataType t);
/// "float32", "bfloat16", ...
const char* dataTypeName(DataType t);
/// "sum", "prod", ...
const char* redOpName(RedOp op);
bool isFloating(DataType t);
/// Throws InvalidArgument unless `t` is a known type; the message starts with "<what>: " (none
/// for an empty `what`, where the caller's boundary names the call).
DataType checkDataType(int t, const char* what);
/// Throws InvalidArgument unless `op` is known and valid for `t` (bitwise ops need integers);
/// `what` as for checkDataType.
RedOp checkRedOp(int op, DataType t, const char* what);

/// A reduction: operator, element type, and the PREMUL_SUM scalar (ignored otherwise).
struct Reduction {
  RedOp op = RedOp::kSum;
  DataType type = DataType::kFloat32;
  double scalar = 1.0;
};

}  // namespace rcclx
