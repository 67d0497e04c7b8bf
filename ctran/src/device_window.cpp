// Implementation of device_window.hpp: allocation, the collective handle exchange, release.
#include "ctran/device_window.hpp"

#include <exception>
#include <optional>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"

#ifdef RCCLX_HAVE_GPU
#include "ctran/device.hpp"
#include "ctran/gpu_runtime.hpp"
#include "transport/cuda_ipc/cuda_ipc_transport.hpp"
#endif

namespace ctran {
namespace {

size_t roundUp256(size_t x) { return (x + 255) & ~size_t{255}; }

#ifdef RCCLX_HAVE_GPU
// Every rank contributes either its payload ('K' + payload) or its failure, a ctran::Error
// ('A' for InvalidArgument, 'E' for any other, + message); when any rank failed, every rank
// throws (InvalidArgument or CudaError) naming the first failing rank, so no rank is left
// waiting on a peer that gave up.
std::vector<Bytes> agree(Bootstrap& boot, const Bytes& payload, const std::exception_ptr& failure,
                         const char* stage) {
  Bytes mine;
  if (!failure) {
    mine.push_back('K');
    mine.insert(mine.end(), payload.begin(), payload.end());
  } else {
    std::string message;
    try {
      std::rethrow_exception(failure);
    } catch (const InvalidArgument& e) {
      mine.push_back('A');
      message = e.what();
    } catch (const Error& e) {
      mine.push_back('E');
      message = e.what();
    }
    mine.insert(mine.end(), message.begin(), message.end());
  }
  auto all = boot.allGather(mine);
  for (size_t r = 0; r < all.size(); ++r) {
    if (!all[r].empty() && (all[r][0] == 'E' || all[r][0] == 'A')) {
      std::string msg = strCat("DeviceWindow: ", stage, " failed on rank ", r, ": ",
                               std::string(all[r].begin() + 1, all[r].end()));
      if (all[r][0] == 'A') throw InvalidArgument(msg);
      throw CudaError(msg);
    }
    if (!all[r].empty()) all[r].erase(all[r].begin());
  }
  return all;
}
#endif

}  // namespace

DeviceWindowLayout DeviceWindowLayout::of(size_t dataBytes, int numSignals) {
  DeviceWindowLayout l;
  l.epochsOffset = 0;
  l.signalsOffset = roundUp256(sizeof(uint32_t) * kMaxEpochSlots);
  l.dataOffset = l.signalsOffset + roundUp256(sizeof(uint64_t) * static_cast<size_t>(numSignals));
  l.totalBytes = l.dataOffset + roundUp256(dataBytes);
  return l;
}

void DeviceWindow::checkGroup(size_t dataBytes, int numSignals) const {
  const Topology& topo = group_->topology();
  CTRAN_CHECK(topo.nranks <= kMaxDeviceRanks, InvalidArgument, "DeviceWindow: ", topo.nranks,
              " ranks, but device windows support at most ", kMaxDeviceRanks);
  CTRAN_CHECK(topo.nHosts == 1, InvalidArgument, "DeviceWindow: the group spans ", topo.nHosts,
              " hosts; device windows need every rank on one host");
  CTRAN_CHECK(dataBytes > 0 && numSignals >= 0, InvalidArgument, "DeviceWindow: dataBytes ",
              dataBytes, " and numSignals ", numSignals, " must be positive");
#ifndef RCCLX_HAVE_GPU
  throw CudaError("DeviceWindow: this build has no GPU code (built without a CUDA compiler)");
#endif
}

DeviceWindow::DeviceWindow(PeerGroup& group, int device, size_t dataBytes, int numSignals)
    : group_(&group), device_(device) {
  checkGroup(dataBytes, numSignals);
#ifdef RCCLX_HAVE_GPU
  const DeviceWindowLayout layout = DeviceWindowLayout::of(dataBytes, numSignals);
  allocBytes_ = layout.totalBytes;
  Bytes record;
  std::exception_ptr failure;
  // Everything below runs on `device`; the caller's current device is back on return (a
  // process may drive several GPUs, each rank's thread with its own current device).
  std::optional<GpuDeviceGuard> guard;
  try {
    std::string why;
    int ndev = ::ctran::device::count(&why);
    CTRAN_CHECK(ndev > 0, CudaError, why);
    CTRAN_CHECK(device >= 0 && device < ndev, InvalidArgument, "GPU ", device,
                " is out of range for ", ndev, " GPUs on this host");
    guard.emplace(device, strCat("DeviceWindow: GPU ", device));
    CTRAN_GPU_CHECK(gpuMallocPeerVisible(&base_, layout.totalBytes), "allocating ",
                    layout.totalBytes, " bytes (", dataBytes, " data, ", numSignals,
                    " signals) on GPU ", device);
    CTRAN_GPU_CHECK(gpuMemset(base_, 0, layout.totalBytes), "zeroing ", layout.totalBytes,
                    " bytes");
    CTRAN_GPU_CHECK(gpuDeviceSynchronize(), "zeroing the window on GPU ", device);
    record = CudaIpcTransport(device).exportMemory(base_, layout.totalBytes);
  } catch (const Error&) {
    failure = std::current_exception();
  }
  const std::vector<char*> bases =
      mapPeers(static_cast<char*>(base_), record, failure, layout.totalBytes);
  handle_.dataBytes = dataBytes;
  handle_.numSignals = numSignals;
  handle_.epochs = reinterpret_cast<uint32_t*>(static_cast<char*>(base_) + layout.epochsOffset);
  for (size_t p = 0; p < bases.size(); ++p) {
    handle_.data[p] = bases[p] + layout.dataOffset;
    handle_.signals[p] = reinterpret_cast<uint64_t*>(bases[p] + layout.signalsOffset);
  }
#endif
}

DeviceWindow::DeviceWindow(PeerGroup& group, int device, UserMemory memory)
    : group_(&group), device_(device) {
  checkGroup(memory.bytes, 0);
#ifdef RCCLX_HAVE_GPU
  Bytes record;
  std::exception_ptr failure;
  try {
    CTRAN_CHECK(memory.ptr != nullptr, InvalidArgument, "DeviceWindow: null user memory");
    record = CudaIpcTransport(device).exportRange(memory.ptr, memory.bytes);
  } catch (const Error&) {
    failure = std::current_exception();
  }
  const std::vector<char*> ranges =
      mapPeers(static_cast<char*>(memory.ptr), record, failure, memory.bytes);
  handle_.dataBytes = memory.bytes;
  for (size_t p = 0; p < ranges.size(); ++p) handle_.data[p] = ranges[p];
#endif
}

std::vector<char*> DeviceWindow::mapPeers(char* mine, const Bytes& record,
                                          std::exception_ptr failure, size_t expectBytes) {
#ifndef RCCLX_HAVE_GPU
  (void)mine, (void)record, (void)failure, (void)expectBytes;
  return {};
#else
  const int rank = group_->rank();
  const int nranks = group_->nranks();
  std::vector<Bytes> records;
  try {
    records = agree(group_->bootstrap(), record, failure, "export");
  } catch (...) {
    release();
    throw;
  }
  CudaIpcTransport ipc(device_);
  imported_.assign(nranks, nullptr);
  std::vector<char*> mapped(nranks, nullptr);
  int inProcess = 0;
  for (int p = 0; p < nranks && !failure; ++p) {
    if (p == rank) {
      mapped[p] = mine;
      continue;
    }
    try {
      // A peer of this process is reached by its pointer (nothing opened, nothing to close).
      auto im = ipc.importMemory(p, records[p], expectBytes);
      if (im.opened) imported_[p] = im.mapping;
      inProcess += im.opened ? 0 : 1;
      mapped[p] = static_cast<char*>(im.ptr);
    } catch (const Error&) {
      failure = std::current_exception();
    }
  }
  try {
    agree(group_->bootstrap(), {}, failure, "mapping peers");
  } catch (...) {
    release();
    throw;
  }
  handle_.rank = rank;
  handle_.nranks = nranks;
  CTRAN_INFO("device window: rank ", rank, "/", nranks, " on GPU ", device_, ", ", expectBytes,
             base_ ? " bytes allocated, " : " bytes of user memory, ", nranks - 1 - inProcess,
             " peer(s) mapped by ", gpuRuntimeName(), " IPC, ", inProcess,
             " in this process by peer access");
  return mapped;
#endif
}

DeviceWindow::~DeviceWindow() {
  if (!destroyed_) {
    try {
      destroy(false);
    } catch (const std::exception& e) {
      CTRAN_WARN("device window destroy: ", e.what());
    }
  }
}

void DeviceWindow::destroy(bool collective) {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "DeviceWindow::destroy: already destroyed");
  destroyed_ = true;
#ifdef RCCLX_HAVE_GPU
  if (collective) {
    try {
      GpuDeviceGuard guard(device_, "device window destroy");
      gpuError_t err = gpuDeviceSynchronize();
      if (err != gpuSuccess) {
        (void)gpuGetLastError();
        CTRAN_WARN("device window destroy: synchronising GPU ", device_, ": ",
                   gpuGetErrorString(err));
      }
    } catch (const Error& e) {
      CTRAN_WARN(e.what());
    }
    try {
      group_->bootstrap().barrier();
    } catch (const std::exception& e) {
      CTRAN_WARN("device window destroy: barrier: ", e.what());
    }
  }
#endif
  release();
}

void DeviceWindow::release() {
#ifdef RCCLX_HAVE_GPU
  // Only mappings this rank opened are closed (imported_ holds no same-process peer).
  CudaIpcTransport ipc(device_);
  for (void* p : imported_) {
    if (p) ipc.release({p, p, true, 0, device_});
  }
  imported_.clear();
  if (base_) {
    std::optional<GpuDeviceGuard> guard;
    try {
      guard.emplace(device_, "device window: freeing");
    } catch (const Error& e) {
      CTRAN_WARN(e.what());
    }
    gpuError_t err = gpuFree(base_);
    if (err != gpuSuccess) {
      (void)gpuGetLastError();
      CTRAN_WARN("device window: freeing ", allocBytes_, " bytes on GPU ", device_, ": ",
                 gpuGetErrorString(err));
    }
    base_ = nullptr;
  }
#endif
  handle_ = DeviceWindowHandle{};
}

}  // namespace ctran
