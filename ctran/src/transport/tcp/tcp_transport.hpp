// The tcp transport: one socket per peer pair; puts and signals are messages that the
// receiver's progress thread applies to its windows in arrival order.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "../../socket.hpp"
#include "ctran/bootstrap.hpp"
#include "ctran/checks.hpp"
#include "ctran/failure.hpp"
#include "ctran/transport.hpp"

namespace ctran {

class TcpTransport : public Transport {
 public:
  /// Collective over `bootstrap`: connects to every rank in `peers` (which must list this
  /// rank on their side too) and starts the progress thread, which records the failures peers
  /// report in `failure`.
  TcpTransport(Bootstrap& bootstrap, const std::vector<int>& peers, GroupFailure* failure);
  ~TcpTransport() override;

  TransportKind kind() const override { return TransportKind::kTcp; }
  Bytes exportWindow(const LocalWindow& window) override;
  std::unique_ptr<PeerWindow> importWindow(int peer, const LocalWindow& mine,
                                           const Bytes& handle) override;
  void releaseWindow(uint64_t windowId) override;
  void checkPeer(int peer) override;

  /// Sends one put message (header then payload) to `peer`.
  void sendPut(int peer, uint64_t windowId, size_t offset, const void* src, size_t bytes);
  /// Sends one signal message to `peer`.
  void sendSignal(int peer, uint64_t windowId, int slot, uint64_t delta);
  /// Tells every connected peer about `report` (best effort: a closed connection is skipped).
  void broadcastFailure(const FailureReport& report) override;

 private:
  struct Connection {
    Socket socket;
    std::mutex sendMu;
    std::atomic<bool> closed{false};
  };

  /// Marks `c` closed and throws RemoteError naming `peer` for a send that failed with `e`.
  [[noreturn]] void failedSend(int peer, Connection& c, const Error& e);
  void acceptLowerRanks(Listener& listener, std::vector<bool> expected, int count,
                        const JobSecret& secret, const Deadline& deadline);
  void progressLoop();
  bool handleMessage(int peer, Connection& c);

  int rank_;
  GroupFailure* failure_;
  std::vector<std::unique_ptr<Connection>> conns_;  // by global rank; null for non-tcp peers
  std::mutex regionsMu_;
  std::map<uint64_t, LocalWindow> regions_;
  int wakeFds_[2] = {-1, -1};
  std::thread progress_;
  std::atomic<bool> progressDone_{false};  // the progress thread has left its loop
};

}  // namespace ctran
