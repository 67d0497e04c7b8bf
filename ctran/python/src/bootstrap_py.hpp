// Python-facing ways to join a group, shared by every extension module of the project.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "ctran/bootstrap.hpp"
#include "ctran/checks.hpp"
#include "py_store.hpp"

namespace ctran::python {

inline UniqueId uniqueIdFromPy(const pybind11::bytes& b) {
  std::string s = b;
  CTRAN_CHECK(s.size() == 128, InvalidArgument, "unique_id must be 128 bytes, got ", s.size());
  UniqueId id;
  std::copy(s.begin(), s.end(), id.bytes.begin());
  return id;
}

/// A Store for `obj`: the module's own Store objects directly, anything else through PyStore.
inline std::shared_ptr<Store> storeFromPy(const pybind11::object& obj) {
  try {
    return obj.cast<std::shared_ptr<Store>>();
  } catch (const pybind11::cast_error&) {
    for (const char* m : {"set", "get", "add"}) {
      CTRAN_CHECK(pybind11::hasattr(obj, m), InvalidArgument, "store: object of type ",
                  std::string(pybind11::str(pybind11::type::handle_of(obj).attr("__name__"))),
                  " has no method '", m, "' (expected a torch.distributed.Store-like object)");
    }
    return std::make_shared<PyStore>(obj);
  }
}

}  // namespace ctran::python
