// PeerGroup: one rank's view of a group of processes: bootstrap, topology and the transports
// that reach each peer. Windows (window.hpp) are created on a PeerGroup.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "ctran/checks.hpp"
#include "ctran/failure.hpp"
#include "ctran/topology.hpp"
#include "ctran/transport.hpp"

namespace ctran {

class TcpTransport;
class Window;

class PeerGroup {
 public:
  /// Collective: discovers the topology and connects the transports. Ranks of one host share
  /// memory (shm) unless RCCLX_TRANSPORT forces tcp or ucx for every pair; ranks on other hosts
  /// use RCCLX_NET_TRANSPORT (auto: ucx where every rank loads libucp, else tcp). The choice is
  /// logged at INFO; a required ucx that a rank cannot load throws InvalidUsage saying why.
  explicit PeerGroup(std::unique_ptr<Bootstrap> bootstrap);
  ~PeerGroup();
  PeerGroup(const PeerGroup&) = delete;
  PeerGroup& operator=(const PeerGroup&) = delete;

  int rank() const { return topology_.rank; }
  int nranks() const { return topology_.nranks; }
  Bootstrap& bootstrap();
  const Topology& topology() const { return topology_; }
  /// How this rank reaches `peer`.
  TransportKind transportTo(int peer) const;
  /// The transport serving `kind` (kShm, kTcp or kUcx); throws InvalidUsage if none is connected.
  Transport& transport(TransportKind kind);
  /// A random tag shared by every rank of this group (names its shared-memory segments).
  const std::string& jobTag() const { return jobTag_; }

  /// Whether messages to and from `peer` (this rank too) move GPU memory in place: the group's
  /// ucx transport reaches it and every rank agreed (Messages::movesDeviceMemory).
  bool movesDeviceMemory(int peer) const;
  /// Runs `batch` on the ucx transport's two-sided messages (transport.hpp), each to or from a
  /// peer reached over ucx or this rank, and waits until every one completed, within
  /// `timeoutMs` (RCCLX_TIMEOUT_MS when negative). A dead peer raises RemoteError and the
  /// deadline TimeoutError, reported to every rank as a window wait's are. `what` names the
  /// call in errors. Throws InvalidArgument for a peer not reached over ucx or a null buffer.
  void exchangeMessages(const std::vector<Message>& batch, const char* what,
                        int64_t timeoutMs = -1);

  /// Collective: allocates a window of `bytes` on every rank (all ranks must pass the same
  /// size) with `numSignals` signal slots, and maps or connects to every peer's.
  std::shared_ptr<Window> createWindow(size_t bytes, int numSignals = 64);

  /// Throws RemoteError if `peer` is known to have died or disconnected, or if any rank
  /// reported a failure of the group (see failure.hpp); validates `peer`. A dead peer found
  /// here is reported to every rank, unless `delivered` (when given) says that what the caller
  /// waits for from it has arrived: a peer may send its last message and leave in an orderly
  /// way (destroy its communicator) before this rank looks, which is no failure of the group.
  /// A peer whose transport saw it destroy its group (tcp) is no failure either, unless the
  /// caller waits on it (`delivered` given) for what has not arrived: that raises at once.
  void checkPeer(int peer, const std::function<bool()>& delivered = nullptr);
  /// Marks the group failed for every rank (this rank's first report counts; later ones are
  /// ignored): `culprit` is the failed rank, or -1 when `cause` names it.
  void reportFailure(int culprit, const std::string& cause);
  /// Reports `timeout` (a wait on timeout.peer() ran out) and waits briefly for that peer's
  /// own report: a peer that was itself waiting on another rank tells who. Throws the
  /// resulting RemoteError when it names another cause, the timeout with the peer's host added
  /// when the peer is on another host; else returns (the caller rethrows).
  void reportTimeout(const TimeoutError& timeout);
  /// Throws RemoteError naming the culprit and cause if any rank reported a failure.
  void checkFailed();
  /// checkFailed() at the start of a call, except where the report says a rank gave up waiting
  /// on this one: this rank, late but alive, then goes into the call, whose first peer check
  /// answers for it (checkPeer), so the report ends at the rank it waits on, not at this one.
  void checkFailedAtCallStart();
  /// The failure any rank reported, or nullopt; never throws and never blocks.
  std::optional<FailureReport> failure();
  /// The group's failure record itself, for watchers that may outlive the group (an error
  /// poller on another thread).
  std::shared_ptr<GroupFailure> failureRecord() const { return failure_; }
  /// Validates a peer rank argument, naming `what` in the error.
  void validatePeer(int peer, const char* what) const;

  /// Collective, at the group's orderly end (before destroy): Bootstrap::close, whose wait on
  /// the store's host ends early once a peer is gone (one that skipped it after a failure, or
  /// died) or any rank reported a failure.
  void closeBootstrap();

  /// Releases transports and the bootstrap. Windows keep their mappings until destroyed.
  /// A second call throws InvalidUsage.
  void destroy();
  bool destroyed() const { return destroyed_; }

 private:
  /// Throws RemoteError with the resolved failure, if any, after leaving this rank's pointer
  /// to it (see failure.hpp). `waitingOn`: the peer this rank is waiting on, if it is in a wait;
  /// where the chain of timeouts ends at this rank, it then answers that it waits on that peer
  /// instead of waiting for its own answer.
  void raiseIfFailed(int waitingOn = -1);
  friend class Window;
  /// Reports that this rank's wait on `peer` ended, or would never end, for `cause`.
  void reportTimeoutOn(int peer, const std::string& cause);
  /// Records this rank's report `r` and, the first time, tells the peers no slot reaches.
  void publish(const FailureReport& r);
  void checkUsable(const char* what) const;

  std::unique_ptr<Bootstrap> bootstrap_;
  Topology topology_;
  std::vector<TransportKind> kinds_;
  std::shared_ptr<GroupFailure> failure_;
  std::unique_ptr<Transport> shm_;
  std::unique_ptr<TcpTransport> tcp_;
  std::unique_ptr<Transport> ucx_;
  std::string jobTag_;
  uint64_t nextWindowId_ = 0;
  bool destroyed_ = false;
};

}  // namespace ctran
