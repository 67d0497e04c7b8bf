// Implementation of buffer_view.hpp. The DLPack structures below follow the DLPack ABI.
#include "buffer_view.hpp"

#include <unordered_map>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/device.hpp"

namespace py = pybind11;

namespace rcclx::python {
namespace {

struct DLDevice {
  int32_t device_type;
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor*);
};

enum DLCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLBool = 6,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e5m2 = 12,
};

std::optional<DataType> fromDLPack(DLDataType t) {
  if (t.lanes != 1) return std::nullopt;
  switch (t.code) {
    case kDLInt:
      if (t.bits == 8) return DataType::kInt8;
      if (t.bits == 32) return DataType::kInt32;
      if (t.bits == 64) return DataType::kInt64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DataType::kUint8;
      if (t.bits == 32) return DataType::kUint32;
      if (t.bits == 64) return DataType::kUint64;
      break;
    case kDLBool:
      if (t.bits == 8) return DataType::kUint8;
      break;
    case kDLFloat:
      if (t.bits == 16) return DataType::kFloat16;
      if (t.bits == 32) return DataType::kFloat32;
      if (t.bits == 64) return DataType::kFloat64;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DataType::kBfloat16;
      break;
    case kDLFloat8_e4m3fn:
      if (t.bits == 8) return DataType::kFloat8E4M3;
      break;
    case kDLFloat8_e5m2:
      if (t.bits == 8) return DataType::kFloat8E5M2;
      break;
  }
  return std::nullopt;
}

// Python buffer-protocol format characters (native byte order).
std::optional<DataType> fromFormat(const std::string& f) {
  std::string c = f;
  if (!c.empty() && (c[0] == '@' || c[0] == '=' || c[0] == '<')) c = c.substr(1);
  if (c == "b") return DataType::kInt8;
  if (c == "B" || c == "?" || c == "c") return DataType::kUint8;
  if (c == "i" || (c == "l" && sizeof(long) == 4)) return DataType::kInt32;
  if (c == "I") return DataType::kUint32;
  if (c == "q" || (c == "l" && sizeof(long) == 8)) return DataType::kInt64;
  if (c == "Q" || (c == "L" && sizeof(long) == 8)) return DataType::kUint64;
  if (c == "e") return DataType::kFloat16;
  if (c == "f") return DataType::kFloat32;
  if (c == "d") return DataType::kFloat64;
  return std::nullopt;
}

template <typename TypeText>
void applyDtype(BufferView& v, size_t nbytes, std::optional<DataType> detected,
                std::optional<DataType> requested, const ArgName& name, TypeText typeText) {
  if (requested) {
    size_t elem = dataTypeSize(*requested);
    CTRAN_CHECK(nbytes % elem == 0, ctran::InvalidArgument, name, ": ", nbytes,
                " bytes is not a whole number of ", dataTypeName(*requested), " elements");
    v.type = *requested;
    v.count = nbytes / elem;
    return;
  }
  CTRAN_CHECK(detected.has_value(), ctran::InvalidArgument, name, ": element type ", typeText(),
              " is not supported (pass dtype= to reinterpret the bytes)");
  v.type = *detected;
  v.count = nbytes / dataTypeSize(v.type);
}

// torch exports a CUDA tensor only while its GPU is the current device, but a thread that
// drives several GPUs may have another one current: export it again with its own GPU current
// (the caller's device is restored). False when `obj` is no CUDA array or refuses again.
bool exportOnItsGpu(const py::handle& obj, py::object& capsule) {
  if (!py::hasattr(obj, "__dlpack_device__")) return false;
  try {
    auto where = obj.attr("__dlpack_device__")().cast<std::pair<int, int>>();
    if (where.first != static_cast<int>(DeviceKind::kCuda)) return false;
    ctran::device::withDevice(where.second, [&] { capsule = obj.attr("__dlpack__")(); });
    return true;
  } catch (py::error_already_set&) {
    return false;
  } catch (py::cast_error&) {
    return false;
  } catch (const ctran::Error&) {
    return false;
  }
}

// `refusal` receives why __dlpack__ failed, for the error if the buffer protocol fails too.
bool viaDLPack(const py::handle& obj, const ArgName& name, std::optional<DataType> dtype,
               BufferView& v, std::string& refusal) {
  if (!py::hasattr(obj, "__dlpack__")) return false;
  py::object capsule;
  try {
    capsule = obj.attr("__dlpack__")();
  } catch (py::error_already_set& e) {
    refusal = ctran::strCat(std::string(py::str(e.type().attr("__name__"))), ": ",
                            std::string(py::str(e.value())));
    // e.g. numpy refuses read-only arrays: try the buffer protocol
    if (!exportOnItsGpu(obj, capsule)) return false;
  }
  auto* mt = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!mt) {
    PyErr_Clear();
    return false;
  }
  const DLTensor& t = mt->dl_tensor;
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  if (t.strides && n > 0) {
    int64_t expect = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expect) {
        std::string shape, strides;
        for (int j = 0; j < t.ndim; ++j) {
          shape += std::to_string(t.shape[j]) + (j + 1 < t.ndim ? ", " : "");
          strides += std::to_string(t.strides[j]) + (j + 1 < t.ndim ? ", " : "");
        }
        throw ctran::InvalidArgument(ctran::strCat(name, " must be contiguous, but has shape (",
                                                   shape, ") and strides (", strides, ")"));
      }
      expect *= t.shape[i];
    }
  }
  size_t elemBytes = (static_cast<size_t>(t.dtype.bits) * t.dtype.lanes + 7) / 8;
  v.data = static_cast<char*>(t.data) + t.byte_offset;
  v.deviceType = t.device.device_type;
  v.deviceId = t.device.device_id;
  v.owner = py::reinterpret_borrow<py::object>(obj);
  const DLDataType dt = t.dtype;
  v.logical = dt.code == kDLBool && !dtype;
  applyDtype(v, static_cast<size_t>(n) * elemBytes, fromDLPack(dt), dtype, name, [dt] {
    return ctran::strCat("(DLPack code ", int(dt.code), ", ", int(dt.bits), " bits)");
  });
  // `capsule` is dropped unconsumed: its destructor calls the deleter, while `owner` keeps
  // the memory alive for as long as this view needs it.
  return true;
}

void viaBufferProtocol(const py::handle& obj, const ArgName& name, std::optional<DataType> dtype,
                       BufferView& v, const std::string& refusal) {
  Py_buffer view;
  int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
  bool writable = true;
  if (PyObject_GetBuffer(obj.ptr(), &view, flags | PyBUF_WRITABLE) != 0) {
    PyErr_Clear();
    writable = false;
    if (PyObject_GetBuffer(obj.ptr(), &view, flags) != 0) {
      PyErr_Clear();
      std::string type = py::str(py::type::handle_of(obj).attr("__name__"));
      std::string why = refusal.empty() ? "" : " (its __dlpack__ failed: " + refusal + ")";
      throw ctran::InvalidArgument(ctran::strCat(
          name,
          ": expected a contiguous array (numpy, torch, or any DLPack or buffer-protocol "
          "object), got ",
          type, why));
    }
  }
  std::string fmt = view.format ? view.format : "B";
  v.data = view.buf;
  v.writable = writable;
  v.owner = py::reinterpret_borrow<py::object>(obj);
  size_t nbytes = static_cast<size_t>(view.len);
  PyBuffer_Release(&view);  // the exporter stays alive through `owner`
  v.logical = fmt == "?" && !dtype;
  applyDtype(v, nbytes, fromFormat(fmt), dtype, name, [&fmt] { return "'" + fmt + "'"; });
}

// torch tensors, read through their attributes. The torch.Tensor type and its dtype objects are
// looked up once torch is imported; the binding never imports torch itself.
class TorchTensors {
 public:
  // Fills `v` when `obj` is a contiguous CPU or CUDA torch tensor of a known dtype; false
  // otherwise (the DLPack path then handles it, or explains what is wrong with it).
  bool view(const py::handle& obj, const ArgName& name, std::optional<DataType> dtype,
            BufferView& v) {
    if (!ready() || !PyObject_TypeCheck(obj.ptr(), tensorType_)) return false;
    py::handle t = obj;
    auto call = [&](py::handle method) {
      return py::reinterpret_steal<py::object>(PyObject_CallMethodNoArgs(t.ptr(), method.ptr()));
    };
    auto get = [&](py::handle attr) {
      return py::reinterpret_steal<py::object>(PyObject_GetAttr(t.ptr(), attr.ptr()));
    };
    py::object contiguous = call(isContiguous_);
    if (!contiguous || contiguous.ptr() != Py_True) return clear();
    // A tensor that requires grad is refused as its DLPack export refuses it.
    py::object grad = get(requiresGrad_);
    if (!grad || grad.ptr() != Py_False) return clear();
    py::object torchType = get(dtype_);
    if (!torchType) return clear();
    auto found = types_.find(torchType.ptr());
    if (found == types_.end()) return false;
    py::object cuda = get(isCuda_);
    if (!cuda) return clear();
    int device = -1;
    if (cuda.ptr() == Py_True) {
      py::object index = call(getDevice_);
      if (!index) return clear();
      device = static_cast<int>(PyLong_AsLong(index.ptr()));
    } else {
      py::object cpu = get(isCpu_);
      if (!cpu || cpu.ptr() != Py_True) return clear();
    }
    py::object ptr = call(dataPtr_);
    py::object numel = call(numel_);
    if (!ptr || !numel) return clear();
    v.data = PyLong_AsVoidPtr(ptr.ptr());
    v.deviceType = static_cast<int>(device >= 0 ? DeviceKind::kCuda : DeviceKind::kCpu);
    v.deviceId = device >= 0 ? device : 0;
    v.writable = true;
    v.owner = py::reinterpret_borrow<py::object>(obj);
    const DataType type = found->second;
    v.logical = torchType.ptr() == boolType_ && !dtype;
    applyDtype(v, static_cast<size_t>(PyLong_AsSsize_t(numel.ptr())) * dataTypeSize(type), type,
               dtype, name, [] { return std::string(); });
    return true;
  }

 private:
  bool clear() {
    PyErr_Clear();
    return false;
  }
  bool ready() {
    if (tensorType_ != nullptr) return true;
    PyObject* torch = PyDict_GetItemString(PyImport_GetModuleDict(), "torch");  // borrowed
    if (torch == nullptr) return false;
    py::module_ m = py::reinterpret_borrow<py::module_>(torch);
    if (!py::hasattr(m, "Tensor")) return false;  // torch is still being imported
    const std::pair<const char*, DataType> known[] = {{"float32", DataType::kFloat32},
                                                      {"float64", DataType::kFloat64},
                                                      {"float16", DataType::kFloat16},
                                                      {"bfloat16", DataType::kBfloat16},
                                                      {"int8", DataType::kInt8},
                                                      {"uint8", DataType::kUint8},
                                                      {"bool", DataType::kUint8},
                                                      {"int32", DataType::kInt32},
                                                      {"int64", DataType::kInt64},
                                                      {"uint32", DataType::kUint32},
                                                      {"uint64", DataType::kUint64},
                                                      {"float8_e4m3fn", DataType::kFloat8E4M3},
                                                      {"float8_e5m2", DataType::kFloat8E5M2}};
    for (const auto& [attr, type] : known) {
      if (py::hasattr(m, attr)) {
        py::object d = m.attr(attr);
        types_[d.ptr()] = type;
        if (std::string(attr) == "bool") boolType_ = d.ptr();
        keep_.push_back(d);
      }
    }
    isContiguous_ = py::str("is_contiguous");
    dtype_ = py::str("dtype");
    requiresGrad_ = py::str("requires_grad");
    isCuda_ = py::str("is_cuda");
    isCpu_ = py::str("is_cpu");
    getDevice_ = py::str("get_device");
    dataPtr_ = py::str("data_ptr");
    numel_ = py::str("numel");
    py::object tensor = m.attr("Tensor");
    keep_.push_back(tensor);
    tensorType_ = reinterpret_cast<PyTypeObject*>(tensor.ptr());
    return true;
  }

  PyTypeObject* tensorType_ = nullptr;
  PyObject* boolType_ = nullptr;  // torch.bool
  std::unordered_map<PyObject*, DataType> types_;
  std::vector<py::object> keep_;  // torch.Tensor and the dtype objects, alive with the module
  py::str isContiguous_, requiresGrad_, dtype_, isCuda_, isCpu_, getDevice_, dataPtr_, numel_;
};

TorchTensors& torchTensors() {
  // Leaked on purpose: its Python objects must not be released after the interpreter ends.
  static auto* t = new TorchTensors();
  return *t;
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const ArgName& n) {
  os << n.op;
  if (n.arg != nullptr) os << ": " << n.arg;
  return os;
}

std::string BufferView::deviceName() const {
  switch (static_cast<DeviceKind>(deviceType)) {
    case DeviceKind::kCpu: return "cpu";
    case DeviceKind::kCudaHost: return "cpu (pinned)";
    case DeviceKind::kCuda: return ctran::strCat("cuda:", deviceId);
    case DeviceKind::kRocm: return ctran::strCat("rocm:", deviceId);
  }
  return ctran::strCat("device type ", deviceType, ":", deviceId);
}

BufferView viewBuffer(const py::handle& obj, const ArgName& name, std::optional<DataType> dtype) {
  CTRAN_CHECK(!obj.is_none(), ctran::InvalidArgument, name, " is None");
  BufferView v;
  if (torchTensors().view(obj, name, dtype, v)) return v;
  std::string refusal;
  if (!viaDLPack(obj, name, dtype, v, refusal)) viaBufferProtocol(obj, name, dtype, v, refusal);
  return v;
}

}  // namespace rcclx::python
