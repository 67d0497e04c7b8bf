// The transport interface: how one rank reaches the registered windows of its peers.
//
// A window is memory every rank of a PeerGroup registers collectively (see window.hpp). Each
// transport exports the local window in its own way (a shared-memory segment name, nothing at
// all for tcp, a CUDA IPC handle for device memory, addresses and remote keys for ucx) and imports
// peers' windows as PeerWindows: directly loadable pointers where the memory can be mapped,
// put/signal messages where not.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ctran/failure.hpp"
#include "ctran/store.hpp"
#include "ctran/wait.hpp"

namespace ctran {

/// How a rank reaches a peer.
enum class TransportKind {
  kSelf,     ///< the rank itself
  kShm,      ///< same host: POSIX shared memory, direct loads and stores
  kTcp,      ///< another host (or forced): sockets, put / signal messages
  kCudaIpc,  ///< same host, device memory: CUDA IPC mappings over NVLink / PCIe
  kUcx,      ///< another host (or forced): UCX remote memory access, put / signal
};

/// "self", "shm", "tcp", "cuda_ipc", "ucx".
const char* transportName(TransportKind kind);

/// Whether the ucx transport can be used in this process: {what it loaded ("UCX 1.22.0 from
/// <path> (<where it was found>)"), ""} or {"", why not (what was looked for and where)}.
/// Loads libucp.so.0 (without initialising UCX) the first time it is found.
std::pair<std::string, std::string> ucxLibraryStatus();

/// A local window as transports see it.
struct LocalWindow {
  uint64_t id = 0;       ///< the same on every rank (windows are created collectively)
  void* data = nullptr;  ///< the window's bytes
  size_t bytes = 0;
  SignalCell* signals = nullptr;  ///< the window's signal slots
  int numSignals = 0;
  std::string segmentName;  ///< shared-memory name of the backing segment (host windows)
};

/// One peer's window, as reached through one transport.
class PeerWindow {
 public:
  virtual ~PeerWindow() = default;
  /// The peer's bytes mapped into this process, or nullptr when only put/signal reach them.
  virtual void* directData() = 0;
  /// The peer's signal slots mapped into this process, or nullptr.
  virtual SignalCell* directSignals() = 0;
  /// Copies `bytes` from `src` to the peer's window at `offset`. Completes locally on return
  /// (src may be reused); becomes visible to the peer no later than a following signal().
  virtual void put(size_t offset, const void* src, size_t bytes) = 0;
  /// Adds `delta` to the peer's signal `slot` (release: earlier puts are visible first).
  virtual void signal(int slot, uint64_t delta) = 0;
};

/// One send or receive of Messages.
struct Message {
  bool send = true;
  int peer = 0;          ///< the other rank (this rank itself for a copy to itself)
  void* data = nullptr;  ///< read by a send, written by a receive
  size_t bytes = 0;      ///< a receive's must equal the matching send's
};

/// Two-sided messages between ranks reached by one transport (ucx: UCX's tagged messages), on
/// any memory that transport moves in place: host memory, and GPU memory where every rank's
/// UCX drives CUDA memory (GPUDirect RDMA where the NIC allows, UCX's own pipelined staging
/// otherwise). They match per ordered pair of ranks in issue order: the n-th message a rank
/// sends to a peer meets the n-th receive that peer issues from it, whatever the sizes.
class Messages {
 public:
  virtual ~Messages() = default;
  /// Whether every rank of the group agreed to hand GPU memory to messages (each one's UCX
  /// drives CUDA memory and its RCCLX_UCX_GPU_MEMORY is on).
  virtual bool movesDeviceMemory() const = 0;
  /// Issues every message of `batch` (none blocks the others), then waits until each
  /// completed: a send's data may be reused, a receive's has landed. Every millisecond or so of
  /// waiting it calls `check(peer)` for each peer still owed a message (which throws for a
  /// failed peer), or `check(rank)` of this rank when only its messages to itself are left (which
  /// throws once any rank reported a failure); at `deadline` it throws TimeoutError naming `what`
  /// and a peer still owed. A receive that gets another size throws InvalidUsage naming both. On
  /// any throw, what is still pending is cancelled (a receive's memory is then undefined).
  virtual void exchange(const std::vector<Message>& batch, const Deadline& deadline,
                        const std::function<void(int)>& check, const char* what) = 0;
};

/// One transport of a PeerGroup, serving every peer reached by its kind.
class Transport {
 public:
  virtual ~Transport() = default;
  virtual TransportKind kind() const = 0;
  /// Called when a local window is created; returns the handle its peers import.
  virtual Bytes exportWindow(const LocalWindow& window) = 0;
  /// Maps or connects to `peer`'s window described by the handle it exported.
  virtual std::unique_ptr<PeerWindow> importWindow(int peer, const LocalWindow& mine,
                                                   const Bytes& handle) = 0;
  /// Called when a local window is destroyed.
  virtual void releaseWindow(uint64_t windowId) = 0;
  /// Throws RemoteError when `peer` is known to have died or disconnected.
  virtual void checkPeer(int peer) = 0;
  /// True once `peer` destroyed its group in an orderly way and everything it sent before has
  /// been applied here; false where the transport cannot tell a departure from a live peer.
  virtual bool peerLeft(int /*peer*/) const { return false; }
  /// Tells every peer this transport reaches about `report`, best effort (a dead peer is
  /// skipped). Transports whose peers read the group's shared-memory slots need not.
  virtual void broadcastFailure(const FailureReport& /*report*/) {}
  /// The transport's two-sided messages, or nullptr when it has none (every transport but
  /// ucx).
  virtual Messages* messages() { return nullptr; }
};

}  // namespace ctran
