#include "call_args.hpp"

#include "ctran/checks.hpp"

namespace rcclx::python {

namespace py = pybind11;
using ctran::InvalidArgument;
using ctran::strCat;

namespace {

bool onGpu(const BufferView& v) { return v.deviceType == static_cast<int>(DeviceKind::kCuda); }

}  // namespace

bool placeCall(const char* op,
               std::initializer_list<std::pair<const char*, const BufferView*>> bufs,
               const std::optional<uintptr_t>& stream, CallOptions& opts) {
  const char* firstName = nullptr;
  const BufferView* first = nullptr;
  for (const auto& [name, v] : bufs) {
    if (v == nullptr) continue;
    if (first == nullptr) {
      first = v;
      firstName = name;
      continue;
    }
    CTRAN_CHECK(onGpu(*v) == onGpu(*first), InvalidArgument, op, ": ", name, " is on ",
                v->deviceName(), " but ", firstName, " is on ", first->deviceName(),
                " (a call's buffers must all be on the communicator's GPU or all on the host)");
  }
  if (first == nullptr || !onGpu(*first)) {
    CTRAN_CHECK(!stream.has_value(), InvalidArgument, op,
                ": stream= applies to GPU buffers only, but the buffers are on the host");
    return false;
  }
  opts.onDevice = true;
  opts.stream = reinterpret_cast<void*>(static_cast<uintptr_t>(stream.value_or(0)));
  return true;
}

std::optional<DataType> dtypeArg(const py::object& d) {
  if (d.is_none()) return std::nullopt;
  return checkDataType(d.cast<int>(), "dtype");
}

BufferView callBuffer(const py::handle& obj, const char* op, const char* arg,
                      std::optional<DataType> dtype, bool needWritable, int commDevice) {
  BufferView v = viewBuffer(obj, strCat(op, ": ", arg), dtype);
  const bool cuda = v.deviceType == static_cast<int>(DeviceKind::kCuda);
  CTRAN_CHECK(cuda || v.deviceType == static_cast<int>(DeviceKind::kCpu) ||
                  v.deviceType == static_cast<int>(DeviceKind::kCudaHost),
              InvalidArgument, op, ": ", arg, " is on device ", v.deviceName(),
              ", which this build cannot reach");
  CTRAN_CHECK(!cuda || commDevice >= 0, InvalidArgument, op, ": ", arg, " is on ", v.deviceName(),
              " but the communicator was created without a device (pass "
              "device= when creating it)");
  CTRAN_CHECK(!cuda || v.deviceId == commDevice, InvalidArgument, op, ": ", arg, " is on ",
              v.deviceName(), " but the communicator runs on cuda:", commDevice);
  CTRAN_CHECK(!needWritable || v.writable, InvalidArgument, op, ": ", arg, " is read-only");
  return v;
}

void sameType(const BufferView& a, const BufferView& b, const char* op) {
  CTRAN_CHECK(a.type == b.type, InvalidArgument, op, ": sendbuf is ", dataTypeName(a.type),
              " but recvbuf is ", dataTypeName(b.type));
}

void expectCount(const BufferView& v, size_t want, const char* op, const char* arg,
                 const std::string& why) {
  CTRAN_CHECK(v.count == want, InvalidArgument, op, ": ", arg, " has ", v.count,
              " elements but needs ", want, " (", why, ")");
}

RedOp opArg(int op, DataType t, const char* what) { return checkRedOp(op, t, what); }

CallOptions optionsOf(bool async, const py::object& algo, const py::object& scalar) {
  CallOptions o;
  o.async = async;
  if (!algo.is_none()) o.algo = algo.cast<std::string>();
  if (!scalar.is_none()) o.premulScalar = scalar.cast<double>();
  return o;
}

std::optional<bool> lowPrecisionArg(const py::object& lp) {
  if (lp.is_none()) return std::nullopt;
  return lp.cast<bool>();
}

std::vector<size_t> countsArg(const py::object& obj, int n, const char* op, const char* arg) {
  auto v = obj.cast<std::vector<int64_t>>();
  CTRAN_CHECK(v.size() == static_cast<size_t>(n), InvalidArgument, op, ": ", arg, " has ", v.size(),
              " entries for ", n, " ranks");
  std::vector<size_t> out;
  for (size_t i = 0; i < v.size(); ++i) {
    CTRAN_CHECK(v[i] >= 0, InvalidArgument, op, ": ", arg, "[", i, "]=", v[i], " is negative");
    out.push_back(static_cast<size_t>(v[i]));
  }
  return out;
}

std::vector<size_t> packed(const std::vector<size_t>& counts) {
  std::vector<size_t> d(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) d[i] = d[i - 1] + counts[i - 1];
  return d;
}

void checkFits(const BufferView& v, const std::vector<size_t>& counts,
               const std::vector<size_t>& displs, const char* op, const char* arg) {
  for (size_t i = 0; i < counts.size(); ++i) {
    CTRAN_CHECK(displs[i] + counts[i] <= v.count, InvalidArgument, op, ": ", arg, " block ", i,
                " (displacement ", displs[i], ", count ", counts[i], ") ends past its ", v.count,
                " elements");
  }
}

}  // namespace rcclx::python
