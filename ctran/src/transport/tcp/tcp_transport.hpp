// The tcp transport: one socket per peer pair; puts and signals are messages that the
// receiver's progress thread applies to its windows in arrival order.
//
// A destroy closes each connection in order: a close message, then an end of file, then it
// reads until the peer's end of file. A peer that reads the close message knows the rank left
// on purpose (destroy is not a barrier: it may still be finishing the last collective): it
// drops what it would still send there and answers with its own end of file. An end of file
// without the close message is a rank that exited or failed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
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
  /// Forgets the window; returns once no put is being received into its memory (a peer stopped
  /// in the middle of one has its connection shut down after 500 ms, which ends the receive).
  void releaseWindow(uint64_t windowId) override;
  /// Throws RemoteError when the connection to `peer` broke; a peer that destroyed its
  /// communicator (its close message came) is no failure.
  void checkPeer(int peer) override;
  bool peerLeft(int peer) const override { return conns_[peer] && conns_[peer]->left.load(); }

  /// Sends one put message (header then payload) to `peer`; nothing once it destroyed its
  /// communicator.
  void sendPut(int peer, uint64_t windowId, size_t offset, const void* src, size_t bytes);
  /// Sends one signal message to `peer`; nothing once it destroyed its communicator.
  void sendSignal(int peer, uint64_t windowId, int slot, uint64_t delta);
  /// Tells every connected peer about `report` (best effort: a closed connection is skipped,
  /// and so is the one this thread is blocked sending on, whose peer is not reading).
  void broadcastFailure(const FailureReport& report) override;
  /// Called with the peer while a put or signal to it makes no progress (its socket is full):
  /// the group's peer check, so that a rank blocked sending to a stopped peer still sees the
  /// group's failure and, blamed, answers that it waits on that peer.
  void setStallCheck(std::function<void(int peer)> check) { stallCheck_ = std::move(check); }

 private:
  enum class MsgType : uint32_t { kPut = 1, kSignal = 2, kFailure = 3, kClose = 4 };
  // A failure message: `slot` is the culprit, `offset` the reporter, `windowId` 1 for a timeout,
  // `value` the cause's bytes.
  struct MsgHeader {
    uint32_t type;
    int32_t slot;
    uint64_t windowId;
    uint64_t offset;
    uint64_t value;  // payload bytes (put, failure) or delta (signal)
  };
  static constexpr uint64_t kNoWindow = ~uint64_t{0};

  // What the progress thread has of the message arriving from one peer. It reads whatever each
  // socket holds and moves on, so a peer stopped in the middle of a message holds up only its
  // own connection, never the failure reports other peers send.
  struct Inbound {
    enum class Stage { kHeader, kPut, kDrain, kCause };
    Stage stage = Stage::kHeader;
    MsgHeader header{};
    size_t headerGot = 0;
    char* dst = nullptr;  // kPut: where the rest of the payload goes
    uint64_t left = 0;    // kPut, kDrain, kCause: payload bytes still to come
    std::string cause;    // kCause
  };

  struct Connection {
    Socket socket;
    std::mutex sendMu;
    std::atomic<std::thread::id> sender{};  // the thread holding sendMu to send a message
    std::atomic<bool> closed{false};
    std::atomic<bool> left{false};  // the peer sent its close message: closed, and no failure
    // Under sendMu: the report this rank published from the stall check of the message being
    // sent here; it follows that message (broadcastFailure cannot wait for a lock it holds).
    std::optional<FailureReport> reportAfterMessage;
    Inbound inbound;                     // the progress thread's alone
    uint64_t receivingInto = kNoWindow;  // the window a put from this peer is landing in
                                         // (under regionsMu_), for releaseWindow
  };

  /// Sends one message (`parts` in order) to `peer` under its connection's lock. A failed send
  /// marks the connection closed and throws RemoteError naming `peer`. What the stall check
  /// throws (the group's failure) passes unchanged once the message is finished, so that the
  /// report can follow it; a peer that reads none of the rest for kReportWait cuts it, and the
  /// connection is closed.
  void sendMessage(int peer, std::initializer_list<std::pair<const void*, size_t>> parts);
  /// Sends `report` to `peer`, whose connection's lock the caller holds; a peer that reads
  /// nothing of it for kReportWait is not told, and its connection is closed.
  void sendReport(int peer, Connection& c, const FailureReport& report);
  void acceptLowerRanks(Listener& listener, std::vector<bool> expected, int count,
                        const JobSecret& secret, const Deadline& deadline);
  void progressLoop();
  /// The destroy's side of the orderly close (see the top of this file), bounded by
  /// kCloseWait; after a failure the connections just close.
  void closeOrderly();
  /// Reads what `peer`'s socket holds (up to a budget, so one busy peer does not starve the
  /// others), applying each message it completes; false once the connection closed.
  bool receiveReady(int peer, Connection& c);
  /// Called with a message's header complete: applies a signal, or sets up the payload.
  void beginMessage(int peer, Connection& c);
  /// Reads what is ready of the payload, at most `budget` bytes; returns how much it read.
  size_t receivePayload(Connection& c, size_t budget, bool* closed);
  /// Called with a message's payload complete: adopts a failure, ends a put.
  void endMessage(Connection& c);
  /// A put from `c` no longer lands in a window (done, or its connection failed).
  void stopReceivingInto(Connection& c);

  int rank_;
  GroupFailure* failure_;
  std::function<void(int peer)> stallCheck_;
  std::vector<std::unique_ptr<Connection>> conns_;  // by global rank; null for non-tcp peers
  std::mutex regionsMu_;
  std::map<uint64_t, LocalWindow> regions_;
  uint64_t windowsExported_ = 0;  // under regionsMu_: ids below it were exported (ids ascend)
  // Signalled when a put stops landing in a window (Connection::receivingInto): releaseWindow
  // waits for every put into the window it releases to end before the caller unmaps it.
  std::condition_variable receiveDone_;
  std::vector<char> drainSink_;  // the progress thread's: payloads that land nowhere
  int wakeFds_[2] = {-1, -1};
  std::thread progress_;
};

}  // namespace ctran
