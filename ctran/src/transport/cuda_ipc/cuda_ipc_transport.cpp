// Implementation of cuda_ipc_transport.hpp.
#include "transport/cuda_ipc/cuda_ipc_transport.hpp"

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <optional>

#include "ctran/device.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/topology.hpp"

namespace ctran {
namespace {

constexpr uint32_t kMagic = 0x52434950;  // "RCIP"

std::atomic<int64_t> gOpenMappings{0};  // device::openIpcMappings()

// The exported record, copied byte for byte through the bootstrap.
struct Record {
  uint32_t magic;
  int32_t device;
  int64_t pid;
  uint64_t processToken;  // with pid: whether the importer is the exporter's process
  uint64_t ptr;           // the exported range, in the exporter's address space
  uint64_t bytes;         // of the range
  uint64_t offset;        // of the range in the allocation the handle maps
  gpuIpcMemHandle_t handle;
};

Bytes recordOf(int device, void* ptr, size_t bytes, void* allocation, size_t offset) {
  Record rec{};
  rec.magic = kMagic;
  rec.device = device;
  rec.pid = static_cast<int64_t>(::getpid());
  rec.processToken = processToken();
  rec.ptr = reinterpret_cast<uint64_t>(ptr);
  rec.bytes = bytes;
  rec.offset = offset;
  CTRAN_GPU_CHECK(gpuIpcGetMemHandle(&rec.handle, allocation), "cuda_ipc: exporting ", bytes,
                  " bytes at ", ptr, " on GPU ", device);
  Bytes out(sizeof(Record));
  std::memcpy(out.data(), &rec, sizeof(Record));
  return out;
}

}  // namespace

Bytes CudaIpcTransport::exportMemory(void* ptr, size_t bytes) const {
  return recordOf(device_, ptr, bytes, ptr, 0);
}

Bytes CudaIpcTransport::exportRange(void* ptr, size_t bytes) const {
  GpuDeviceGuard guard(device_, strCat("cuda_ipc: exporting ", bytes, " bytes at ", ptr));
  gpuPointerAttributes attr{};
  const gpuError_t err = gpuPointerGetAttributes(&attr, ptr);
  if (err != gpuSuccess) (void)gpuGetLastError();
  CTRAN_CHECK(err == gpuSuccess && gpuPointerIsDevice(attr), InvalidArgument, "cuda_ipc: ", ptr,
              " is not device memory (registered memory must come from a device allocation)");
  CTRAN_CHECK(attr.device == device_, InvalidArgument, "cuda_ipc: ", ptr, " is memory of GPU ",
              attr.device, ", not of GPU ", device_, " (this rank's)");
  GpuAllocation alloc;
  CTRAN_GPU_CHECK(gpuAllocationOf(ptr, &alloc), "cuda_ipc: finding the allocation that holds ", ptr,
                  " on GPU ", device_);
  CTRAN_CHECK(alloc.ipcCapable, InvalidArgument, "cuda_ipc: ", ptr,
              " lies in memory with no IPC handle (mapped through the virtual memory API, "
              "cuMemCreate, as torch's expandable segments are): register memory from cudaMalloc");
  const size_t offset =
      static_cast<size_t>(static_cast<char*>(ptr) - static_cast<char*>(alloc.base));
  CTRAN_CHECK(bytes <= alloc.bytes - offset, InvalidArgument, "cuda_ipc: ", bytes, " bytes at ",
              ptr, " run past the end of its allocation (", alloc.bytes - offset,
              " bytes left in it): a registered range must lie in one allocation");
  return recordOf(device_, ptr, bytes, alloc.base, offset);
}

CudaIpcTransport::Imported CudaIpcTransport::importMemory(int peer, const Bytes& record,
                                                          size_t expectBytes) const {
  CTRAN_CHECK(record.size() == sizeof(Record), InvalidArgument, "cuda_ipc: rank ", peer, " sent a ",
              record.size(), "-byte record, expected ", sizeof(Record),
              " (mismatched library versions?)");
  Record rec;
  std::memcpy(&rec, record.data(), sizeof(Record));
  CTRAN_CHECK(rec.magic == kMagic, InvalidArgument, "cuda_ipc: rank ", peer,
              " sent a malformed record");
  CTRAN_CHECK(rec.bytes == expectBytes, InvalidArgument, "cuda_ipc: rank ", peer, " allocated ",
              rec.bytes, " bytes but this rank ", expectBytes,
              " (every rank must pass the same sizes)");
  Imported out;
  out.bytes = rec.bytes;
  out.device = rec.device;
  // Peer access is enabled from the current device, and mappings belong to its context.
  GpuDeviceGuard guard(device_, strCat("cuda_ipc: importing rank ", peer, "'s memory"));
  if (rec.pid == static_cast<int64_t>(::getpid()) && rec.processToken == processToken()) {
    // Same process (it drives several GPUs): a process cannot open its own IPC handles
    // (cudaIpcOpenMemHandle fails); the pointer itself is valid here, reached by peer access.
    CTRAN_CHECK(rec.device != device_, InvalidArgument, "cuda_ipc: rank ", peer, " uses GPU ",
                rec.device, " in this same process, like this rank: one GPU per rank");
    int can = 0;
    CTRAN_GPU_CHECK(gpuDeviceCanAccessPeer(&can, device_, rec.device), "cuda_ipc: rank ", peer);
    CTRAN_CHECK(can, CudaError, "cuda_ipc: GPU ", device_, " cannot access GPU ", rec.device,
                " of rank ", peer, " (no peer-to-peer path)");
    // Once per ordered pair of devices in a process; other communicators may have done it.
    gpuError_t err = gpuDeviceEnablePeerAccess(rec.device, 0);
    if (err == gpuErrorPeerAccessAlreadyEnabled) {
      (void)gpuGetLastError();
    } else if (err != gpuSuccess) {
      throwGpuError(err, "gpuDeviceEnablePeerAccess",
                    strCat("cuda_ipc: GPU ", device_, " -> GPU ", rec.device, " of rank ", peer));
    }
    out.ptr = reinterpret_cast<void*>(rec.ptr);
    return out;
  }
  char* mapped = nullptr;
  CTRAN_GPU_CHECK(gpuIpcOpenMemHandle(reinterpret_cast<void**>(&mapped), rec.handle,
                                      gpuIpcMemLazyEnablePeerAccess),
                  "cuda_ipc: mapping ", rec.bytes, " bytes of rank ", peer, " (pid ", rec.pid,
                  ", GPU ", rec.device, ") into GPU ", device_,
                  " (the GPUs need a peer-to-peer path, and the processes the same host)");
  out.ptr = mapped + rec.offset;
  out.mapping = mapped;
  out.opened = true;
  gOpenMappings.fetch_add(1, std::memory_order_relaxed);
  return out;
}

bool CudaIpcTransport::release(const Imported& imported) const {
  if (!imported.opened || imported.mapping == nullptr) return true;
  std::optional<GpuDeviceGuard> guard;
  try {
    guard.emplace(device_, "cuda_ipc: closing a peer's mapping");
  } catch (const Error& e) {
    CTRAN_WARN(e.what());
  }
  gpuError_t err = gpuIpcCloseMemHandle(imported.mapping);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    CTRAN_WARN("cuda_ipc: closing the mapping of a peer's memory at ", imported.mapping,
               " failed: ", gpuGetErrorString(err));
    return false;
  }
  gOpenMappings.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

int64_t device::openIpcMappings() { return gOpenMappings.load(std::memory_order_relaxed); }

}  // namespace ctran
