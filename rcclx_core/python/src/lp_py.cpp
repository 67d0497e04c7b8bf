// Binding of the low-precision wire format's host reference (rcclx/lp_codec.hpp), of the pure
// low-precision policy (rcclx/lp_policy.hpp) and of the GPU kernels' launch shape
// (rcclx/lp_gpu_shape.hpp), for tests and tools.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "buffer_view.hpp"
#include "call_args.hpp"
#include "ctran/checks.hpp"
#include "device/lp/lp_gpu_shape.hpp"
#include "lp/lp_codec.hpp"
#include "lp/lp_policy.hpp"

namespace py = pybind11;

namespace rcclx::python {
namespace {

BufferView hostView(const py::handle& obj, const char* what, std::optional<DataType> dtype,
                    bool writable) {
  BufferView v = viewBuffer(obj, ArgName{what}, dtype);
  CTRAN_CHECK(v.deviceType == static_cast<int>(DeviceKind::kCpu) ||
                  v.deviceType == static_cast<int>(DeviceKind::kCudaHost),
              ctran::InvalidArgument, what, " must be in host memory, not on ", v.deviceName());
  CTRAN_CHECK(!writable || v.writable, ctran::InvalidArgument, what, " is read-only");
  return v;
}

std::optional<DataType> typeArg(const py::object& d) { return dtypeArg(d); }

}  // namespace

void registerLowPrecision(py::module_& m) {
  m.def(
      "lp_wire_bytes",
      [](size_t count, size_t blockElems) { return lp::lpWireBytes(count, blockElems); },
      py::arg("count"), py::arg("block_elems") = 256,
      "Bytes of the low-precision wire segment of `count` elements.");
  m.def(
      "lp_quantize",
      [](py::object src, py::object dst, py::object dtype, size_t blockElems) {
        BufferView s = hostView(src, "lp_quantize: src", typeArg(dtype), false);
        BufferView d = hostView(dst, "lp_quantize: dst", DataType::kUint8, true);
        const size_t need = lp::lpWireBytes(s.count, blockElems);
        CTRAN_CHECK(d.count == need, ctran::InvalidArgument, "lp_quantize: dst has ", d.count,
                    " bytes but the segment of ", s.count, " elements takes ", need);
        py::gil_scoped_release nogil;
        lp::lpEncode(s.data, s.type, s.count, blockElems, d.data);
      },
      py::arg("src"), py::arg("dst"), py::arg("dtype") = py::none(), py::arg("block_elems") = 256,
      "Encodes src (float32, or bfloat16 with dtype=) as one wire segment into dst (uint8, "
      "lp_wire_bytes(src elements) bytes): the bytes low-precision collectives send.");
  m.def(
      "lp_dequantize",
      [](py::object src, py::object dst, py::object dtype, size_t blockElems) {
        BufferView d = hostView(dst, "lp_dequantize: dst", typeArg(dtype), true);
        BufferView s = hostView(src, "lp_dequantize: src", DataType::kUint8, false);
        const size_t need = lp::lpWireBytes(d.count, blockElems);
        CTRAN_CHECK(s.count == need, ctran::InvalidArgument, "lp_dequantize: src has ", s.count,
                    " bytes but the segment of ", d.count, " elements takes ", need);
        py::gil_scoped_release nogil;
        lp::lpDecode(s.data, d.count, blockElems, d.data, d.type);
      },
      py::arg("src"), py::arg("dst"), py::arg("dtype") = py::none(), py::arg("block_elems") = 256,
      "Decodes the wire segment src into dst (float32, or bfloat16 with dtype=).");
  m.def(
      "low_precision_decision",
      [](const std::string& collective, size_t nbytes, int dtype, int op, int nranks,
         std::optional<bool> hint, bool gpu) {
        lp::LpRequest req;
        req.collective = lp::parseLpCollective(collective, "low_precision_decision");
        req.bytes = nbytes;
        req.type = checkDataType(dtype, "low_precision_decision");
        req.op = checkRedOp(op, req.type, "low_precision_decision");
        req.nranks = nranks;
        req.hint = hint;
        req.onDevice = gpu;
        lp::LpDecision d = lp::decideLowPrecision(req, lp::lpConfigFrom(nullptr));
        return py::make_tuple(d.use, d.reason);
      },
      py::arg("collective"), py::arg("nbytes"), py::arg("dtype") = 7, py::arg("op") = 0,
      py::arg("nranks") = 2, py::arg("hint") = py::none(), py::arg("gpu") = false,
      "The low-precision policy for one call under the current environment's knobs: (used, "
      "reason).");
  m.def(
      "lp_gpu_launch_shape",
      [](size_t segmentBlocks, size_t blockElems, int nranks, size_t stagingBytes, int maxBlocks,
         size_t maxChunkBlocks, bool oneSlot) {
        const lp::LpShape s = lp::lpLaunchShape(segmentBlocks, blockElems, nranks, stagingBytes,
                                                maxBlocks, maxChunkBlocks, oneSlot);
        py::dict d;
        d["blocks"] = s.blocks;
        d["slots"] = s.slots;
        d["chunk_blocks"] = s.chunkBlocks;
        d["chunk_bytes"] = s.chunkBytes;
        d["staging_bytes"] = s.stagingBytes;
        return d;
      },
      py::arg("segment_blocks"), py::arg("block_elems") = 256, py::arg("nranks") = 2,
      py::arg("staging_bytes") = 40 << 20, py::arg("max_blocks") = 256,
      py::arg("max_chunk_blocks") = 128, py::arg("one_slot") = false,
      "The low-precision GPU kernels' launch shape for segments of segment_blocks quantizer "
      "blocks: {blocks, slots, chunk_blocks, chunk_bytes, staging_bytes}.");
}

}  // namespace rcclx::python
