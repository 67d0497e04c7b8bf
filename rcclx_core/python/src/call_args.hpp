// What a collective binding converts before a call: each array into a Buffer (where it lives
// as DLPack says, its type, writability), the dtype=, op= and counts arguments, and the
// per-call options. Everything the call then checks (placement, types, counts) is the core's
// (rcclx/communicator.hpp); nothing here decides where a call runs.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>  // list <-> std::vector casts (countsArg); in every unit that casts

#include <cstdint>
#include <optional>
#include <vector>

#include "buffer_view.hpp"
#include "rcclx/buffer.hpp"

namespace rcclx::python {

/// The dtype= argument: None, or a DataType number (checked).
std::optional<DataType> dtypeArg(const pybind11::object& d);

/// `obj` (named `arg` of `op` in errors) as a Buffer; `view` receives the view that keeps its
/// memory alive for the call. Refuses memory of a device kind this build cannot reach.
Buffer bufferArg(const pybind11::handle& obj, const char* op, const char* arg,
                 std::optional<DataType> dtype, BufferView& view);

/// A rank argument (root=, peer=): a Python int (not a bool), else a TypeError naming `arg` of
/// `op`; one outside the range of int is an InvalidArgument naming it (the core checks that a
/// rank is one of the communicator's).
int rankArg(const pybind11::handle& obj, const char* op, const char* arg);

/// The op= argument of a reduction over `send` (`op` names the call in errors) as a RedOp
/// (validity for the type is the core's check). Over bool arrays it is logical, as in PyTorch:
/// SUM is MAX (or), PROD is MIN (and); AVG and PREMUL_SUM are refused.
RedOp reductionOp(int op, const BufferView& send, const char* name);

/// async_op=, algo=, scalar=, stream= and low_precision= as CallOptions.
CallOptions optionsOf(bool async, const pybind11::object& algo = pybind11::none(),
                      const pybind11::object& scalar = pybind11::none(),
                      const std::optional<uintptr_t>& stream = std::nullopt,
                      const pybind11::object& lowPrecision = pybind11::none());

/// A list of non-negative counts or displacements (`arg` of `op` in errors).
std::vector<size_t> countsArg(const pybind11::object& obj, const char* op, const char* arg);

}  // namespace rcclx::python
