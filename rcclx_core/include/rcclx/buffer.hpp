// Buffer and CallOptions: what every front end (the Python module, the NCCL C ABI, the torch
// backends) hands the communicator for one collective. A front end only converts its arrays
// or pointers into Buffers; where they live, whether they fit the call and which stream runs it
// are checked once, behind Communicator's methods.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "rcclx/types.hpp"

namespace rcclx {

/// Where a buffer's memory lives.
enum class MemoryKind : int {
  kUnknown = 0,  ///< not said (a raw C pointer): the communicator asks the GPU runtime
  kHost = 1,     ///< host memory (pageable or pinned)
  kDevice = 2,   ///< device memory of GPU `Buffer::device`
};

/// One buffer of a call: `count` elements of `type` at `data`.
struct Buffer {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  MemoryKind kind = MemoryKind::kUnknown;
  int device = -1;       ///< with kDevice: the GPU index
  bool writable = true;  ///< false for read-only memory (a call that writes it is refused)

  size_t bytes() const { return count * dataTypeSize(type); }

  /// Host memory.
  static Buffer host(void* data, size_t count, DataType type) {
    return {data, count, type, MemoryKind::kHost, -1, true};
  }
  /// Device memory of GPU `device`.
  static Buffer onDevice(void* data, size_t count, DataType type, int device) {
    return {data, count, type, MemoryKind::kDevice, device, true};
  }
  /// Memory the communicator locates itself (as NCCL's C API passes it).
  static Buffer unknown(const void* data, size_t count, DataType type) {
    return {const_cast<void*>(data), count, type, MemoryKind::kUnknown, -1, true};
  }
};

/// Per-call options.
struct CallOptions {
  bool async = false;  ///< host buffers: return at once; the Work completes later
  /// all_reduce only: force an algorithm ("auto", "ring", "dda_flat", "dda_tree", "dda_large";
  /// "" follows the communicator's RCCLX_ALLREDUCE_ALGO).
  std::string algo;
  double premulScalar = 1.0;  ///< PREMUL_SUM only: this rank's scalar
  /// GPU buffers: the cudaStream_t / hipStream_t to enqueue on (nullopt: the legacy default
  /// stream). Naming a stream with host buffers is an error; with no buffers (barrier) it
  /// puts the call on the GPU.
  std::optional<void*> stream;
  /// all_reduce, all_gather(_v), reduce_scatter(_v), all_to_all: true forces the FP8 wire
  /// format (ineligible calls still fall back), false forbids it, nullopt leaves it to the
  /// communicator's RCCL_LOW_PRECISION_* and RCCLX_LP_MIN_BYTES.
  std::optional<bool> lowPrecision;
};

}  // namespace rcclx
