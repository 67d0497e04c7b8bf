// Implementation of call_args.hpp.
#include "call_args.hpp"

#include <climits>

#include "ctran/checks.hpp"

namespace rcclx::python {

namespace py = pybind11;
using ctran::InvalidArgument;

std::optional<DataType> dtypeArg(const py::object& d) {
  if (d.is_none()) return std::nullopt;
  // pybind's own cast_error is an untyped RuntimeError that names neither the argument nor the
  // type it got: reject a non-integer dtype as the TypeError Python code expects.
  int code = 0;
  try {
    code = d.cast<int>();
  } catch (const py::cast_error&) {
    throw py::type_error(
        ctran::strCat("dtype: expected a DataType or an int, got ",
                      py::str(py::type::of(d).attr("__name__")).cast<std::string>()));
  }
  return checkDataType(code, "dtype");
}

int rankArg(const py::handle& obj, const char* op, const char* arg) {
  if (!PyLong_Check(obj.ptr()) || PyBool_Check(obj.ptr())) {
    throw py::type_error(
        ctran::strCat(op, ": ", arg, " must be an int (a rank), got ",
                      py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
  }
  int overflow = 0;
  const long long value = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
  CTRAN_CHECK(overflow == 0 && value >= INT_MIN && value <= INT_MAX, InvalidArgument, op, ": ", arg,
              " ", py::str(obj).cast<std::string>(), " is not a rank of any communicator");
  return static_cast<int>(value);
}

RedOp reductionOp(int op, const BufferView& send, const char* name) {
  const auto r = static_cast<RedOp>(op);
  if (!send.logical) return r;
  if (r == RedOp::kSum) return RedOp::kMax;
  if (r == RedOp::kProd) return RedOp::kMin;
  CTRAN_CHECK(r != RedOp::kAvg && r != RedOp::kPreMulSum, InvalidArgument, name, ": op ",
              redOpName(r),
              " is not defined on bool arrays (sum is a logical or, prod a logical "
              "and)");
  return r;
}

Buffer bufferArg(const py::handle& obj, const char* op, const char* arg,
                 std::optional<DataType> dtype, BufferView& view) {
  view = viewBuffer(obj, ArgName{op, arg}, dtype);
  Buffer b;
  b.data = view.data;
  b.count = view.count;
  b.type = view.type;
  b.writable = view.writable;
  switch (static_cast<DeviceKind>(view.deviceType)) {
    case DeviceKind::kCpu:
    case DeviceKind::kCudaHost: b.kind = MemoryKind::kHost; break;
    case DeviceKind::kCuda:
      b.kind = MemoryKind::kDevice;
      b.device = view.deviceId;
      break;
    default:
      throw InvalidArgument(ctran::strCat(op, ": ", arg, " is on device ", view.deviceName(),
                                          ", which this build cannot reach"));
  }
  return b;
}

CallOptions optionsOf(bool async, const py::object& algo, const py::object& scalar,
                      const std::optional<uintptr_t>& stream, const py::object& lowPrecision) {
  CallOptions o;
  o.async = async;
  if (!algo.is_none()) o.algo = algo.cast<std::string>();
  if (!scalar.is_none()) o.premulScalar = scalar.cast<double>();
  if (stream.has_value()) o.stream = reinterpret_cast<void*>(*stream);
  if (!lowPrecision.is_none()) o.lowPrecision = lowPrecision.cast<bool>();
  return o;
}

std::vector<size_t> countsArg(const py::object& obj, const char* op, const char* arg) {
  std::vector<int64_t> v;
  try {
    v = obj.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    throw py::type_error(
        ctran::strCat(op, ": ", arg, ": expected a sequence of ints, got ",
                      py::str(py::type::of(obj).attr("__name__")).cast<std::string>()));
  }
  std::vector<size_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    CTRAN_CHECK(v[i] >= 0, InvalidArgument, op, ": ", arg, "[", i, "]=", v[i], " is negative");
    out.push_back(static_cast<size_t>(v[i]));
  }
  return out;
}

}  // namespace rcclx::python
