// rcclx_core._C: enums, configuration, the Communicator binding, and (in _C._testing) the hooks
// tests and tools use.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "config.hpp"
#include "ctran/bootstrap.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "errors_py.hpp"
#include "rcclx/types.hpp"

namespace py = pybind11;

namespace rcclx::python {

void registerCommunicator(py::module_& m);
void registerLowPrecision(py::module_& m);
void registerTesting(py::module_& m);

namespace {

void registerTypes(py::module_& m) {
  py::enum_<DataType>(m, "DataType", "Element types (values equal ncclDataType_t).")
      .value("INT8", DataType::kInt8)
      .value("UINT8", DataType::kUint8)
      .value("INT32", DataType::kInt32)
      .value("UINT32", DataType::kUint32)
      .value("INT64", DataType::kInt64)
      .value("UINT64", DataType::kUint64)
      .value("FLOAT16", DataType::kFloat16)
      .value("FLOAT32", DataType::kFloat32)
      .value("FLOAT64", DataType::kFloat64)
      .value("BFLOAT16", DataType::kBfloat16)
      .value("FLOAT8_E4M3", DataType::kFloat8E4M3)
      .value("FLOAT8_E5M2", DataType::kFloat8E5M2);
  py::enum_<RedOp>(m, "RedOp", "Reduction operators (the first five equal ncclRedOp_t).")
      .value("SUM", RedOp::kSum)
      .value("PROD", RedOp::kProd)
      .value("MAX", RedOp::kMax)
      .value("MIN", RedOp::kMin)
      .value("AVG", RedOp::kAvg)
      .value("PREMUL_SUM", RedOp::kPreMulSum)
      .value("BAND", RedOp::kBitAnd)
      .value("BOR", RedOp::kBitOr)
      .value("BXOR", RedOp::kBitXor);
  m.def(
      "datatype_size", [](int t) { return dataTypeSize(checkDataType(t, "datatype_size")); },
      py::arg("dtype"));
}

void registerConfig(py::module_& m) {
  m.def(
      "config_dump",
      [] {
        declareKnobs();
        py::list out;
        for (const auto& k : ctran::config::dump()) {
          py::dict d;
          static const char* kTypes[] = {"bool", "int", "bytes", "string", "enum"};
          d["name"] = k.spec.name;
          d["type"] = kTypes[static_cast<int>(k.spec.type)];
          d["default"] = k.spec.defaultValue;
          d["choices"] = k.spec.choices;
          d["description"] = k.spec.description;
          d["value"] = k.value;
          d["from_env"] = k.fromEnv;
          out.append(d);
        }
        return out;
      },
      "Every knob of ctran and rcclx_core with its effective value.");
  m.def("refresh_logging", &ctran::log::refresh, "Re-reads RCCLX_DEBUG.");
  m.def(
      "create_unique_id",
      [] {
        ctran::UniqueId id = ctran::createUniqueId();
        return py::bytes(reinterpret_cast<const char*>(id.bytes.data()), id.bytes.size());
      },
      "Starts a bootstrap store in this process and returns its 128-byte unique id.");
}

}  // namespace
}  // namespace rcclx::python

PYBIND11_MODULE(_C, m) {
  m.doc() = "rcclx_core native module: communicators and collectives.";
  py::module_::import("ctran._C");  // the error classes live there
  ctran::python::registerErrorTranslator();
  rcclx::python::registerTypes(m);
  rcclx::python::registerConfig(m);
  rcclx::python::registerCommunicator(m);
  py::module_ testing = m.def_submodule("_testing", "Hooks into the core for tests and tools.");
  rcclx::python::registerTesting(testing);
}
