// Implementation of types.hpp.
#include "rcclx/types.hpp"

#include <string>

#include "ctran/checks.hpp"

namespace rcclx {

size_t dataTypeSize(DataType t) {
  switch (t) {
    case DataType::kInt8:
    case DataType::kUint8:
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2: return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16: return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64: return 8;
  }
  return 0;
}

const char* dataTypeName(DataType t) {
  static const char* kNames[kNumDataTypes] = {"int8",    "uint8",    "int32",       "uint32",
                                              "int64",   "uint64",   "float16",     "float32",
                                              "float64", "bfloat16", "float8_e4m3", "float8_e5m2"};
  int i = static_cast<int>(t);
  return i >= 0 && i < kNumDataTypes ? kNames[i] : "unknown";
}

const char* redOpName(RedOp op) {
  static const char* kNames[kNumRedOps] = {"sum",        "prod", "max", "min", "avg",
                                           "premul_sum", "band", "bor", "bxor"};
  int i = static_cast<int>(op);
  return i >= 0 && i < kNumRedOps ? kNames[i] : "unknown";
}

bool isFloating(DataType t) {
  switch (t) {
    case DataType::kFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kBfloat16:
    case DataType::kFloat8E4M3:
    case DataType::kFloat8E5M2: return true;
    default: return false;
  }
}

namespace {

/// "<what>: ", or nothing when `what` is empty (the caller's boundary names the call).
std::string about(const char* what) {
  return what[0] != '\0' ? ctran::strCat(what, ": ") : std::string();
}

}  // namespace

DataType checkDataType(int t, const char* what) {
  CTRAN_CHECK(t >= 0 && t < kNumDataTypes, ctran::InvalidArgument, about(what), "datatype ", t,
              " is not a valid datatype");
  return static_cast<DataType>(t);
}

RedOp checkRedOp(int op, DataType t, const char* what) {
  CTRAN_CHECK(op >= 0 && op < kNumRedOps, ctran::InvalidArgument, about(what), "op ", op,
              " is not a valid reduction operator");
  RedOp r = static_cast<RedOp>(op);
  bool bitwise = r == RedOp::kBitAnd || r == RedOp::kBitOr || r == RedOp::kBitXor;
  CTRAN_CHECK(!(bitwise && isFloating(t)), ctran::InvalidArgument, about(what), "op ", redOpName(r),
              " is not valid for datatype ", dataTypeName(t), " (bitwise ops need integers)");
  return r;
}

}  // namespace rcclx
