// The cuda_ipc transport: how ranks of one host reach each other's device memory.
//
// A rank exports an allocation, or a range inside one, as a small record (the CUDA IPC handle of
// the allocation, the range's offset in it, its process id and process token, device and
// pointer); a peer imports it by opening the handle, which maps the allocation into its own
// address space with peer access enabled (NVLink or PCIe), and adds the offset. A record from
// the importer's own process (same pid and processToken(): one process driving several GPUs)
// cannot be opened: the raw pointer is used instead, after enabling peer access from the
// importer's GPU to the exporter's. Compiled only in builds with GPU code.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/store.hpp"

namespace ctran {

class CudaIpcTransport {
 public:
  /// Serves allocations on GPU `device` of this process.
  explicit CudaIpcTransport(int device) : device_(device) {}

  /// The record peers import `ptr` (the base of a cudaMalloc allocation of `bytes`) from.
  Bytes exportMemory(void* ptr, size_t bytes) const;
  /// The record peers import [ptr, ptr + bytes) from, anywhere inside one cudaMalloc
  /// allocation (memory the caller got elsewhere, e.g. from torch's caching allocator): the
  /// allocation's handle and the range's offset in it. Throws InvalidArgument when the range
  /// is not inside one device allocation on device_ or lies in memory with no IPC handle (from
  /// cuMemCreate, such as torch's expandable segments), CudaError when the runtime refuses.
  Bytes exportRange(void* ptr, size_t bytes) const;

  /// What importing a peer's record gave.
  struct Imported {
    void* ptr = nullptr;      ///< the peer's memory, usable from this process on device_
    void* mapping = nullptr;  ///< what to close: the mapped allocation's base (when opened)
    bool opened = false;      ///< true when an IPC mapping was opened (close it with release())
    size_t bytes = 0;
    int device = -1;  ///< the peer's GPU
  };
  /// Maps `peer`'s record (with device_ current, restoring the caller's device); throws
  /// CudaError (naming the peer, its device and pid) on failure and InvalidArgument for a
  /// malformed record, a size other than `expectBytes`, or a same-process peer on device_.
  Imported importMemory(int peer, const Bytes& record, size_t expectBytes) const;

  /// Closes a mapping importMemory opened (no-op for same-process pointers). Never throws:
  /// returns false and logs a warning when the runtime refuses.
  bool release(const Imported& imported) const;

 private:
  int device_;
};

}  // namespace ctran
