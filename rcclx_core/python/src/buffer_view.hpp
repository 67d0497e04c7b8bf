// BufferView: the memory of any array a Python caller passes, through DLPack (numpy, torch,
// cupy...) or, failing that, the buffer protocol (bytes-like, read-only numpy arrays).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "rcclx/types.hpp"

namespace rcclx::python {

/// Device kinds as DLPack numbers them.
enum class DeviceKind : int { kCpu = 1, kCuda = 2, kCudaHost = 3, kRocm = 10 };

struct BufferView {
  void* data = nullptr;
  size_t count = 0;  ///< elements of `type`
  DataType type = DataType::kFloat32;
  int deviceType = static_cast<int>(DeviceKind::kCpu);
  int deviceId = 0;
  bool writable = true;
  /// A bool array (bytes of 0 or 1) viewed with its own type: a reduction over it is logical
  /// (reductionOp in call_args.hpp).
  bool logical = false;
  pybind11::object owner;  ///< keeps the exporter (and its capsule) alive

  size_t bytes() const { return count * dataTypeSize(type); }
  std::string deviceName() const;
};

/// How errors name a buffer: "all_reduce: sendbuf" (`arg` may be null: just `op`). Formatted
/// only when an error is raised.
struct ArgName {
  const char* op;
  const char* arg = nullptr;
};
std::ostream& operator<<(std::ostream& os, const ArgName& n);

/// Views `obj`. Requires C-contiguous memory. With `dtype`, the bytes are reinterpreted as
/// that type (the size must divide). torch tensors are read through their attributes (their
/// DLPack export costs several microseconds a call), everything else through DLPack (numpy,
/// cupy...) or, failing that, the buffer protocol.
BufferView viewBuffer(const pybind11::handle& obj, const ArgName& name,
                      std::optional<DataType> dtype = std::nullopt);

}  // namespace rcclx::python
