// ctran._C: module definition, error classes, configuration and device queries.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "ctran/config.hpp"
#include "ctran/device.hpp"
#include "ctran/logging.hpp"
#include "ctran/transport.hpp"
#include "errors_py.hpp"

namespace py = pybind11;

namespace ctran::python {

void registerStore(py::module_& m);
void registerPeerGroup(py::module_& m);
void registerDeviceRma(py::module_& m);

void defineErrors(py::module_& m) {
  auto make = [&](const char* name, py::object bases, const char* doc) {
    py::object cls = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
        (std::string("ctran.") + name).c_str(), doc, bases.ptr(), nullptr));
    m.attr(name) = cls;
    return cls;
  };
  py::object error = make("Error", py::reinterpret_borrow<py::object>(PyExc_RuntimeError),
                          "Base of every RCCLX error.");
  make("InvalidArgumentError", py::make_tuple(error, py::handle(PyExc_ValueError)),
       "An argument has a value the call cannot accept.");
  make("InvalidUsageError", error, "The call is not valid in the object's current state.");
  make("SystemCallError", error, "An operating-system call failed.");
  make("CudaError", error, "A GPU runtime call failed or no GPU is usable.");
  py::object remote = make("RemoteError", error, "A peer failed, exited or disconnected.");
  make("TimeoutError", py::make_tuple(remote, py::handle(PyExc_TimeoutError)),
       "A wait on a peer outlived RCCLX_TIMEOUT_MS.");
}

namespace {

const char* typeName(KnobType t) {
  switch (t) {
    case KnobType::kBool: return "bool";
    case KnobType::kInt: return "int";
    case KnobType::kBytes: return "bytes";
    case KnobType::kString: return "string";
    case KnobType::kEnum: return "enum";
  }
  return "?";
}

}  // namespace

void registerConfig(py::module_& m) {
  m.def(
      "config_dump",
      [] {
        py::list out;
        for (const auto& k : config::dump()) {
          py::dict d;
          d["name"] = k.spec.name;
          d["type"] = typeName(k.spec.type);
          d["default"] = k.spec.defaultValue;
          d["choices"] = k.spec.choices;
          d["description"] = k.spec.description;
          d["value"] = k.value;
          d["from_env"] = k.fromEnv;
          out.append(d);
        }
        return out;
      },
      "Every declared knob with its effective value, in declaration order.");
  m.def("refresh_logging", &log::refresh, "Re-reads RCCLX_DEBUG.");
  m.def(
      "log_info", [](const std::string& message) { CTRAN_INFO(message); }, py::arg("message"),
      "Writes `message` as an INFO line of RCCLX's log (shown when RCCLX_DEBUG is INFO or more).");
  m.def("built_with_cuda", &device::builtWithCuda, "True when the GPU code was compiled.");
  m.def("ucx_library", &ucxLibraryStatus,
        "(the UCX library the ucx transport uses, why it cannot be used): one of the two is "
        "empty. Loads libucp.so.0 the first time it is found, without initialising UCX.");
  m.def(
      "cuda_device_count",
      [] {
        std::string why;
        int n = device::count(&why);
        return py::make_tuple(n, why);
      },
      "(number of usable GPUs, reason when 0).");
  m.def("cuda_probe", &device::probe, py::arg("device"), py::arg("value"),
        py::call_guard<py::gil_scoped_release>(),
        "Runs a one-thread kernel that stores `value` on `device` and returns it.");
}

}  // namespace ctran::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "ctran native module: bootstrap, stores, peer groups and windows.";
  ctran::python::defineErrors(m);
  ctran::python::registerErrorTranslator();
  ctran::python::registerConfig(m);
  ctran::python::registerStore(m);
  ctran::python::registerPeerGroup(m);
  ctran::python::registerDeviceRma(m);
}
