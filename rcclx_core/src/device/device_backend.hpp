// DeviceBackend: every collective on GPU buffers, each enqueued on the caller's stream. Calls
// arrive validated by the front door (front_door.cpp). A build with GPU code links
// device_backend.cpp; a build without links null_device_backend.cpp, whose create() refuses,
// so no host file carries GPU conditionals.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "alltoallv_dynamic_plan.hpp"
#include "rcclx/buffer.hpp"
#include "rcclx/types.hpp"
#include "selector.hpp"
#include "settings.hpp"
#include "tags.hpp"
#include "transfer_plan.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {

class HostBackend;

/// One send or receive of a (grouped) device point-to-point call.
struct DeviceTransfer {
  bool send = true;
  int peer = 0;
  void* buf = nullptr;
  size_t bytes = 0;
};

class DeviceBackend {
 public:
  /// Collective over `group`, one GPU per rank: on one host, the kernels, with the device
  /// staging allocated and mapped on GPU `device` (a captured allreduce drains `host`'s work
  /// before it maps its output through the bootstrap); across hosts, the staged back-end
  /// (staged_backend.hpp), which runs `host`'s collectives on copies in pinned memory. Throws
  /// CudaError in a build without GPU code.
  static std::unique_ptr<DeviceBackend> create(ctran::PeerGroup& group, const Settings& settings,
                                               int device, HostBackend& host);
  virtual ~DeviceBackend() = default;

  /// The selector's choice for an allreduce of `bytes` on GPU buffers under `cfg`.
  virtual Selection select(size_t bytes, DataType type, RedOp op,
                           const SelectorConfig& cfg) const = 0;

  virtual void allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                         const CallOptions& opts, void* stream) = 0;
  virtual void reduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                      double premulScalar, int root, void* stream) = 0;
  virtual void allGatherV(const void* send, void* recv, const std::vector<size_t>& counts,
                          const std::vector<size_t>& displs, DataType type, const CallOptions& opts,
                          void* stream) = 0;
  virtual void reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                              const std::vector<size_t>& displs, DataType type, RedOp op,
                              const CallOptions& opts, void* stream) = 0;
  /// Low precision when planned, else the exchange of equal blocks.
  virtual void allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                        const CallOptions& opts, void* stream) = 0;
  /// Full precision, out of place only (every block moves through the peers' staging while
  /// others still read the input): InvalidArgument when send is recv and anything moves.
  virtual void allToAllV(const void* send, void* recv, const std::vector<size_t>& sendCounts,
                         const std::vector<size_t>& sendDispls,
                         const std::vector<size_t>& recvCounts,
                         const std::vector<size_t>& recvDispls, DataType type, void* stream) = 0;
  /// allToAllvDynamic in device code only (counts never reach the host); an overflow it
  /// records is raised by the communicator's next host-side call of it.
  virtual void allToAllvDynamic(const DynamicCall& call, void* stream) = 0;
  /// The first error finished allToAllvDynamic kernels recorded ("" if none), cleared.
  virtual std::string takeDynamicErrors() = 0;
  /// broadcast, gather, scatter, barrier (`kind`): one copy kernel over `exchange`;
  /// `what` names the call in errors.
  virtual void exchange(const Exchange& exchange, OpKind kind, const char* what, void* stream) = 0;
  /// Runs `ops` together: the k-th send to and the k-th receive from each peer go in launch k.
  virtual void sendRecv(const std::vector<DeviceTransfer>& ops, void* stream) = 0;

  /// Symmetric buffers (see Communicator::allocSymmetric).
  virtual void* allocSymmetric(size_t bytes) = 0;
  virtual void registerSymmetric(void* ptr, size_t bytes) = 0;
  virtual void freeSymmetric(void* ptr) = 0;
  /// One-sided calls (see Communicator::openDeviceSignals and its neighbours).
  virtual void openSignals() = 0;
  virtual void putSignal(int peer, const void* buffer, size_t offset, const void* src, size_t bytes,
                         void* stream) = 0;
  virtual void signal(int peer, void* stream) = 0;
  virtual void waitSignals(const std::vector<uint64_t>& counts, void* stream) = 0;
  /// Allreduce calls that stored their all-gather straight into the peers' outputs.
  virtual uint64_t symmetricCalls() const = 0;
  /// Captured outputs mapped for graphs still alive.
  virtual size_t graphRegistrations() = 0;
  /// Replaces the allreduce kernels' launch shapes (RCCLX_GPU_TUNING syntax).
  virtual void setTuning(const std::string& spec) = 0;
  /// Device memory the communicator allocated for itself on this rank (bytes).
  virtual size_t allocatedBytes() const = 0;
  /// How the communicator's ranks share GPUs and what that does to launches (one line).
  virtual std::string gpuSharing() const = 0;

  /// Reports to the group, once, a wait of this communicator's kernels that ran out of time
  /// (recorded in device-visible memory; the watch thread reports it too, within a poll
  /// period): called before the group's failure is checked, so a call or a check right after
  /// the stream drained raises it.
  virtual void reportKernelTimeout() = 0;

  /// Releases every device resource (collective unless `collective` is false, as for abort).
  virtual void destroy(bool collective) = 0;
};

}  // namespace rcclx
