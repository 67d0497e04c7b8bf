// Implementation of cuda_ipc_transport.hpp.
#include "transport/cuda_ipc/cuda_ipc_transport.hpp"

#include <unistd.h>

#include <cstring>
#include <optional>

#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/topology.hpp"

namespace ctran {
namespace {

constexpr uint32_t kMagic = 0x52434950;  // "RCIP"

// The exported record, copied byte for byte through the bootstrap.
struct Record {
  uint32_t magic;
  int32_t device;
  int64_t pid;
  uint64_t processToken;  // with pid: whether the importer is the exporter's process
  uint64_t ptr;
  uint64_t bytes;
  gpuIpcMemHandle_t handle;
};

}  // namespace

Bytes CudaIpcTransport::exportMemory(void* ptr, size_t bytes) const {
  Record rec{};
  rec.magic = kMagic;
  rec.device = device_;
  rec.pid = static_cast<int64_t>(::getpid());
  rec.processToken = processToken();
  rec.ptr = reinterpret_cast<uint64_t>(ptr);
  rec.bytes = bytes;
  CTRAN_GPU_CHECK(gpuIpcGetMemHandle(&rec.handle, ptr), "cuda_ipc: exporting ", bytes, " bytes at ",
                  ptr, " on GPU ", device_);
  Bytes out(sizeof(Record));
  std::memcpy(out.data(), &rec, sizeof(Record));
  return out;
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
  void* mapped = nullptr;
  CTRAN_GPU_CHECK(gpuIpcOpenMemHandle(&mapped, rec.handle, gpuIpcMemLazyEnablePeerAccess),
                  "cuda_ipc: mapping ", rec.bytes, " bytes of rank ", peer, " (pid ", rec.pid,
                  ", GPU ", rec.device, ") into GPU ", device_,
                  " (the GPUs need a peer-to-peer path, and the processes the same host)");
  out.ptr = mapped;
  out.opened = true;
  return out;
}

bool CudaIpcTransport::release(const Imported& imported) const {
  if (!imported.opened || imported.ptr == nullptr) return true;
  std::optional<GpuDeviceGuard> guard;
  try {
    guard.emplace(device_, "cuda_ipc: closing a peer's mapping");
  } catch (const Error& e) {
    CTRAN_WARN(e.what());
  }
  gpuError_t err = gpuIpcCloseMemHandle(imported.ptr);
  if (err != gpuSuccess) {
    (void)gpuGetLastError();
    CTRAN_WARN("cuda_ipc: closing the mapping of a peer's memory at ", imported.ptr,
               " failed: ", gpuGetErrorString(err));
    return false;
  }
  return true;
}

}  // namespace ctran
