// What the collective bindings check and convert before a call: the arguments (dtype, op,
// counts), each buffer against the communicator's device, buffers against each other, and
// where the call runs (the GPU stream or the host). Every refusal is an InvalidArgument that
// names the call and the argument.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // list <-> std::vector casts (countsArg); in every unit that casts

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer_view.hpp"
#include "rcclx/communicator.hpp"

namespace rcclx::python {

/// The dtype= argument: None, or a DataType number (checked).
std::optional<DataType> dtypeArg(const pybind11::object& d);

/// A view of a call's buffer: host memory, or device memory of the communicator's GPU.
BufferView callBuffer(const pybind11::handle& obj, const char* op, const char* arg,
                      std::optional<DataType> dtype, bool needWritable, int commDevice);

/// Where a call runs, from its buffers (name, view; null views are skipped): all on the
/// communicator's GPU -> true, with opts set to enqueue on `stream` (default: the legacy
/// default stream, 0); all on the host -> false (stream= is refused there). Mixed buffers are
/// an error naming both.
bool placeCall(const char* op,
               std::initializer_list<std::pair<const char*, const BufferView*>> bufs,
               const std::optional<uintptr_t>& stream, CallOptions& opts);

void sameType(const BufferView& a, const BufferView& b, const char* op);
void expectCount(const BufferView& v, size_t want, const char* op, const char* arg,
                 const std::string& why);
RedOp opArg(int op, DataType t, const char* what);
CallOptions optionsOf(bool async, const pybind11::object& algo = pybind11::none(),
                      const pybind11::object& scalar = pybind11::none());
/// low_precision=: True / False force the FP8 wire format on / off, None leaves it to the knobs.
std::optional<bool> lowPrecisionArg(const pybind11::object& lp);
/// A list of n non-negative counts (send_counts=, recv_counts=, displacements).
std::vector<size_t> countsArg(const pybind11::object& obj, int n, const char* op, const char* arg);
/// Displacements of blocks packed back to back.
std::vector<size_t> packed(const std::vector<size_t>& counts);
/// Every block (displacement, count) ends inside v.
void checkFits(const BufferView& v, const std::vector<size_t>& counts,
               const std::vector<size_t>& displs, const char* op, const char* arg);

}  // namespace rcclx::python
