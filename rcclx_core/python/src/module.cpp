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
      .value("INT8", DataType::kInt8, "8-bit signed integer.")
      .value("UINT8", DataType::kUint8, "8-bit unsigned integer.")
      .value("INT32", DataType::kInt32, "32-bit signed integer.")
      .value("UINT32", DataType::kUint32, "32-bit unsigned integer.")
      .value("INT64", DataType::kInt64, "64-bit signed integer.")
      .value("UINT64", DataType::kUint64, "64-bit unsigned integer.")
      .value("FLOAT16", DataType::kFloat16, "IEEE half precision.")
      .value("FLOAT32", DataType::kFloat32, "IEEE single precision.")
      .value("FLOAT64", DataType::kFloat64, "IEEE double precision.")
      .value("BFLOAT16", DataType::kBfloat16, "bfloat16 (8-bit exponent, 7-bit mantissa).")
      .value("FLOAT8_E4M3", DataType::kFloat8E4M3, "FP8 with 4 exponent and 3 mantissa bits.")
      .value("FLOAT8_E5M2", DataType::kFloat8E5M2, "FP8 with 5 exponent and 2 mantissa bits.");
  py::enum_<RedOp>(m, "RedOp", "Reduction operators (the first five equal ncclRedOp_t).")
      .value("SUM", RedOp::kSum, "Sum.")
      .value("PROD", RedOp::kProd, "Product.")
      .value("MAX", RedOp::kMax, "Maximum.")
      .value("MIN", RedOp::kMin, "Minimum.")
      .value("AVG", RedOp::kAvg, "Mean over ranks.")
      .value("PREMUL_SUM", RedOp::kPreMulSum, "Sum of each rank's input times the call's scalar.")
      .value("BAND", RedOp::kBitAnd, "Bitwise and (integer types).")
      .value("BOR", RedOp::kBitOr, "Bitwise or (integer types).")
      .value("BXOR", RedOp::kBitXor, "Bitwise exclusive or (integer types).");
  m.def(
      "datatype_size", [](int t) { return dataTypeSize(checkDataType(t, "datatype_size")); },
      py::arg("dtype"), "Bytes of one element of `dtype` (a DataType).");
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
