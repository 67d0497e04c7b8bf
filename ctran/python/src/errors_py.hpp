// Maps ctran's C++ exceptions to the Python classes defined in ctran._C. Shared by every
// extension module of the project, so an error raised in rcclx_core is a ctran.Error too.
#pragma once

#include <pybind11/pybind11.h>

#include "ctran/checks.hpp"

namespace ctran::python {

/// Creates the exception classes in `m` (ctran._C only).
void defineErrors(pybind11::module_& m);

/// Registers a translator raising the classes found in module `ctran._C`.
inline void registerErrorTranslator() {
  namespace py = pybind11;
  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const ctran::Error& e) {
      const char* cls = "Error";
      switch (e.result()) {
        case Result::kInvalidArgument: cls = "InvalidArgumentError"; break;
        case Result::kInvalidUsage: cls = "InvalidUsageError"; break;
        case Result::kSystemError: cls = "SystemCallError"; break;
        case Result::kUnhandledCudaError: cls = "CudaError"; break;
        case Result::kRemoteError:
          cls = dynamic_cast<const TimeoutError*>(&e) ? "TimeoutError" : "RemoteError";
          break;
        default: break;
      }
      py::object type = py::module_::import("ctran._C").attr(cls);
      PyErr_SetString(type.ptr(), e.what());
    }
  });
}

}  // namespace ctran::python
