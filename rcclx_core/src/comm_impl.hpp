// Communicator::Impl: what a communicator holds. The front door (front_door.cpp) validates a
// call and places it; the back-ends run it: host buffers on `host`, GPU buffers on `device`.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "ctran/peer_group.hpp"
#include "device/device_backend.hpp"
#include "host/host_backend.hpp"
#include "rcclx/communicator.hpp"
#include "settings.hpp"

namespace rcclx {

struct Communicator::Impl {
  Settings settings;  ///< read once at creation; the back-ends keep references to it
  int device = -1;
  int rank = 0;
  int nranks = 0;
  std::unique_ptr<ctran::PeerGroup> group;
  std::unique_ptr<HostBackend> host;
  std::unique_ptr<DeviceBackend> gpu;  ///< null without a device
  uint64_t splitSeq = 0;
  int groupDepth = 0;
  /// The open group's collectives on GPU buffers, enqueued in call order by groupEnd (so a
  /// cancelled group enqueues none of them).
  std::vector<std::function<void()>> groupedDeviceCalls;
  std::vector<DeviceTransfer> groupedDeviceP2P;  ///< device sends / receives of the open group
  void* groupedDeviceStream = nullptr;
  /// Set by destroy() or abort(); atomic: abort() may run on another thread while a call on
  /// this one checks it.
  std::atomic<bool> destroyed{false};

  /// Releases every resource, waiting for peers (`collective`) or not (abort).
  void release(bool collective);
};

/// What a call decided about where it runs.
struct Placement {
  bool onDevice = false;
  void* stream = nullptr;  ///< with onDevice
};

}  // namespace rcclx
