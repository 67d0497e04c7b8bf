// Implementation of tcp_transport.hpp.
#include "tcp_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>

#include "../../handshake.hpp"
#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"

namespace ctran {
namespace {

// How long releaseWindow waits for a put being received into the window to end.
constexpr int64_t kReleaseWaitMs = 500;

// How long a destroy waits for its peers to acknowledge its close message (their progress
// threads answer at once; a stopped peer is not waited on for longer than this).
constexpr auto kCloseWait = std::chrono::milliseconds(2000);

// How long a failure report waits for room in one peer's socket before it is dropped for that
// peer, and how long a message that was being sent when the failure was seen waits to be
// finished. The detecting rank raises only once it told every peer: one stopped peer with a full
// socket must not delay that, nor the reports to the others, by the whole send timeout. A peer
// that reads nothing for this long is not reading at all.
constexpr auto kReportWait = std::chrono::milliseconds(100);

// What a message may make the receiver allocate: a failure's cause at most kMaxFailureCause
// bytes (a longer one is a broken peer); a put that lands nowhere is drained kDrainChunk at a
// time; a signal carries nothing. A put that lands in a window is bounded by the window.
constexpr uint64_t kMaxFailureCause = 4096;
constexpr uint64_t kDrainChunk = 1 << 20;

// What the progress thread reads from one socket before it serves the others again.
constexpr size_t kReadBudget = 4 << 20;

// Sends `bytes` without blocking past `until` (a send timeout of 0 means none, and a destroy
// must not wait forever on a stopped peer); false when they did not all go.
bool sendBefore(int fd, const void* data, size_t bytes,
                std::chrono::steady_clock::time_point until) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd pfd{fd, POLLOUT, 0};
    ::poll(&pfd, 1, static_cast<int>(left.count()));
  }
  return true;
}

class TcpPeerWindow : public PeerWindow {
 public:
  TcpPeerWindow(TcpTransport* t, int peer, uint64_t id, size_t bytes, int numSignals)
      : transport_(t), peer_(peer), id_(id), bytes_(bytes), numSignals_(numSignals) {}
  void* directData() override { return nullptr; }
  SignalCell* directSignals() override { return nullptr; }
  void put(size_t offset, const void* src, size_t bytes) override {
    CTRAN_ASSERT(offset + bytes <= bytes_, "put beyond the window checked by the caller");
    transport_->sendPut(peer_, id_, offset, src, bytes);
  }
  void signal(int slot, uint64_t delta) override {
    CTRAN_ASSERT(slot >= 0 && slot < numSignals_);
    transport_->sendSignal(peer_, id_, slot, delta);
  }

 private:
  TcpTransport* transport_;
  int peer_;
  uint64_t id_;
  size_t bytes_;
  int numSignals_;
};

}  // namespace

TcpTransport::TcpTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                           GroupFailure* failure)
    : rank_(bootstrap.rank()), failure_(failure) {
  conns_.resize(bootstrap.nranks());
  std::vector<bool> fromBelow(conns_.size(), false);
  int expectAccepts = 0;
  for (int p : peers) {
    if (p < rank_) {
      fromBelow[p] = true;
      ++expectAccepts;
    }
  }
  // The listener lives only while the group connects, on the interface peers are told of, with
  // room in its queue for every lower rank on top of the usual bound.
  Listener listener(listenHost(bootstrap.localHost()), 0,
                    expectAccepts + static_cast<int>(knob::RCCLX_MAX_PENDING_CONNECTIONS()));
  listener.setNonBlocking();
  std::string me = strCat(bootstrap.localHost(), ":", listener.port());
  auto addrs = bootstrap.allGather(Bytes(me.begin(), me.end()));
  Deadline deadline = Deadline::after();
  // Connect to higher ranks and send the handshake (the kernel queues both until the peer
  // accepts), accept from lower ranks, then collect the higher ranks' verdicts: no rank waits
  // on another's answer before serving its own listener, so connecting is not a chain.
  std::vector<std::pair<int, std::string>> dialled;
  for (int p : peers) {
    if (p < rank_) continue;
    std::string text(addrs[p].begin(), addrs[p].end());
    auto c = std::make_unique<Connection>();
    c->socket = Socket::connect(parseAddress(text, "tcp peer address"), deadline);
    handshake::sendHello(c->socket, handshake::Channel::kTransport, rank_, bootstrap.secret());
    conns_[p] = std::move(c);
    dialled.emplace_back(p, text);
  }
  acceptLowerRanks(listener, fromBelow, expectAccepts, bootstrap.secret(), deadline);
  for (const auto& [p, text] : dialled) {
    handshake::awaitVerdict(conns_[p]->socket, handshake::Channel::kTransport,
                            strCat(text, " (rank ", p, ")"), deadline);
  }
  // A send to a peer that stops reading (its link went down) ends at the wait deadline, as
  // every wait on a peer does, instead of blocking for good on a full socket buffer.
  for (auto& c : conns_) {
    if (c) c->socket.setSendTimeout(knob::RCCLX_TIMEOUT_MS());
  }
  CTRAN_SYSCHECK(::pipe2(wakeFds_, O_CLOEXEC), "pipe2");
  progress_ = std::thread([this] { progressLoop(); });
  CTRAN_INFO("tcp transport: connected to ", peers.size(), " peers");
}

// Polls the listener and every connection still handshaking, so that a stranger that never
// finishes its hello delays no one: it is dropped at its own handshake deadline, and refused
// connections are logged and forgotten while the group goes on connecting.
void TcpTransport::acceptLowerRanks(Listener& listener, std::vector<bool> expected, int count,
                                    const JobSecret& secret, const Deadline& deadline) {
  struct Incoming {
    Socket socket;
    SocketAddress from;
    handshake::Pending hello;
    Deadline deadline;
  };
  const size_t maxPending =
      static_cast<size_t>(std::max<int64_t>(1, knob::RCCLX_MAX_PENDING_CONNECTIONS()));
  std::vector<Incoming> pending;
  std::vector<pollfd> fds;
  while (count > 0) {
    fds.assign(1, {listener.fd(), static_cast<short>(pending.size() < maxPending ? POLLIN : 0), 0});
    for (auto& in : pending) fds.push_back({in.socket.fd(), POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), 50);
    if (rc < 0 && errno != EINTR) throwSystemError("poll", errno);
    if (deadline.expired()) {
      throwTimeout(deadline, strCat("tcp transport: connections from ", count,
                                    " lower rank(s) of the group"));
    }
    // Judge before accepting more: `pending` and `fds` stay index-aligned.
    for (size_t i = pending.size(); i-- > 0;) {
      Incoming& in = pending[i];
      bool finished = false;
      try {
        if (fds[i + 1].revents != 0 && in.hello.feed(in.socket)) {
          handshake::Hello h = in.hello.judge(in.socket, handshake::Channel::kTransport, secret);
          CTRAN_CHECK(h.rank >= 0 && h.rank < static_cast<int>(expected.size()) &&
                          expected[h.rank] && !conns_[h.rank],
                      RemoteError, "it claims rank ", h.rank, ", which is not a lower peer (",
                      "or has connected already)");
          expected[h.rank] = false;
          conns_[h.rank] = std::make_unique<Connection>();
          conns_[h.rank]->socket = std::move(in.socket);
          --count;
          finished = true;
        } else if (in.deadline.expired()) {
          throwTimeout(in.deadline, "a complete handshake (RCCLX_HANDSHAKE_TIMEOUT_MS)");
        }
      } catch (const Error& e) {
        CTRAN_WARN("tcp transport: refused a connection from ", in.from.str(), ": ", e.what());
        finished = true;
      }
      if (finished) pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (fds[0].revents & POLLIN) {
      while (pending.size() < maxPending) {
        Socket s = listener.accept();  // non-blocking: invalid once the queue is empty
        if (!s.valid()) break;
        SocketAddress from = s.peerAddress();
        pending.push_back({std::move(s), from, {}, handshake::deadline()});
      }
    }
  }
  for (auto& in : pending) {
    CTRAN_WARN("tcp transport: dropped a connection from ", in.from.str(),
               " that had not finished its handshake when the group was complete");
  }
}

TcpTransport::~TcpTransport() {
  char x = 1;
  if (::write(wakeFds_[1], &x, 1) < 0) CTRAN_WARN("tcp transport: wake-up write failed");
  // The progress thread never blocks inside a message, so it sees the wake-up at once.
  if (progress_.joinable()) progress_.join();
  ::close(wakeFds_[0]);
  ::close(wakeFds_[1]);
  closeOrderly();
}

void TcpTransport::closeOrderly() {
  // After a failure the peers know this rank is gone; an end of file tells them the rest.
  if (failure_ != nullptr && failure_->current().has_value()) return;
  const auto until = std::chrono::steady_clock::now() + kCloseWait;
  std::vector<pollfd> open;
  for (auto& c : conns_) {
    if (!c || c->closed.load()) continue;
    const MsgHeader h{static_cast<uint32_t>(MsgType::kClose), 0, kNoWindow, 0, 0};
    // A peer that reads nothing is stopped or gone: it gets the end of file alone.
    if (!sendBefore(c->socket.fd(), &h, sizeof(h), until)) continue;
    c->socket.shutdownWrite();
    open.push_back({c->socket.fd(), POLLIN, 0});
  }
  // Whatever the peers sent before they read the close message is read and dropped until
  // their end of file: closing a socket with unread data resets the connection, and a reset
  // may discard what the peer had not read yet of this rank's last messages.
  std::vector<char> sink(64 << 10);
  while (!open.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    if (::poll(open.data(), open.size(), static_cast<int>(left.count())) < 0 && errno != EINTR) {
      break;
    }
    for (size_t i = open.size(); i-- > 0;) {
      if (open[i].revents == 0) continue;
      ssize_t n = 0;
      while ((n = ::recv(open[i].fd, sink.data(), sink.size(), MSG_DONTWAIT)) > 0) {
      }
      const bool ended = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      if (ended) open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  if (!open.empty()) {
    CTRAN_INFO("tcp transport: ", open.size(), " peer(s) did not acknowledge the close within ",
               kCloseWait.count(), " ms");
  }
}

Bytes TcpTransport::exportWindow(const LocalWindow& window) {
  std::lock_guard<std::mutex> lock(regionsMu_);
  regions_[window.id] = window;
  windowsExported_ = std::max(windowsExported_, window.id + 1);
  return {};
}

std::unique_ptr<PeerWindow> TcpTransport::importWindow(int peer, const LocalWindow& mine,
                                                       const Bytes&) {
  return std::make_unique<TcpPeerWindow>(this, peer, mine.id, mine.bytes, mine.numSignals);
}

void TcpTransport::releaseWindow(uint64_t windowId) {
  std::unique_lock<std::mutex> lock(regionsMu_);
  regions_.erase(windowId);
  auto idle = [&] {
    for (const auto& c : conns_) {
      if (c && c->receivingInto == windowId) return false;
    }
    return true;
  };
  if (receiveDone_.wait_for(lock, std::chrono::milliseconds(kReleaseWaitMs), idle)) return;
  // A put in flight into a window being released means its sender is stopped or failed: the
  // rest of it would otherwise be written into memory the caller is about to unmap.
  for (size_t p = 0; p < conns_.size(); ++p) {
    Connection* c = conns_[p].get();
    if (!c || c->receivingInto != windowId) continue;
    CTRAN_WARN("tcp transport: a put from rank ", p, " into window ", windowId,
               " was still arriving when the window was released; closing that connection");
    c->closed.store(true);
    c->socket.shutdown();
  }
  receiveDone_.wait(lock, idle);
}

void TcpTransport::checkPeer(int peer) {
  auto& c = conns_[peer];
  if (c && c->closed.load() && !c->left.load()) {
    throw RemoteError(
        strCat("peer rank ", peer, " closed its tcp connection (it exited or failed)"));
  }
}

void TcpTransport::sendPut(int peer, uint64_t windowId, size_t offset, const void* src,
                           size_t bytes) {
  if (conns_[peer]->left.load()) return;
  checkPeer(peer);
  MsgHeader h{static_cast<uint32_t>(MsgType::kPut), 0, windowId, offset, bytes};
  sendMessage(peer, {{&h, sizeof(h)}, {src, bytes}});
}

void TcpTransport::sendSignal(int peer, uint64_t windowId, int slot, uint64_t delta) {
  if (conns_[peer]->left.load()) return;
  checkPeer(peer);
  MsgHeader h{static_cast<uint32_t>(MsgType::kSignal), slot, windowId, 0, delta};
  sendMessage(peer, {{&h, sizeof(h)}});
}

void TcpTransport::sendMessage(int peer,
                               std::initializer_list<std::pair<const void*, size_t>> parts) {
  Connection& c = *conns_[peer];
  std::lock_guard<std::mutex> lock(c.sendMu);
  struct Sending {  // who holds the lock, for broadcastFailure
    std::atomic<std::thread::id>& sender;
    explicit Sending(std::atomic<std::thread::id>& s) : sender(s) {
      sender.store(std::this_thread::get_id());
    }
    ~Sending() { sender.store(std::thread::id()); }
  } sending(c.sender);
  // What the stall check threw, and when. The message is finished before it passes on: a
  // message cut in the middle would leave nothing more to be sent on this connection, and the
  // peer, waiting on this rank, would hear of the failure from nobody.
  std::exception_ptr failure;
  std::chrono::steady_clock::time_point failedAt;
  auto stalled = [&](std::chrono::steady_clock::duration stalledFor) {
    if (failure) {
      if (std::min(stalledFor, std::chrono::steady_clock::now() - failedAt) >= kReportWait)
        std::rethrow_exception(failure);
      return;
    }
    if (!stallCheck_) return;
    try {
      stallCheck_(peer);
    } catch (...) {
      failure = std::current_exception();
      failedAt = std::chrono::steady_clock::now();
    }
  };
  try {
    for (const auto& [data, bytes] : parts) {
      if (bytes) c.socket.sendAll(data, bytes, stalled);
    }
  } catch (const Error& e) {
    c.closed.store(true);
    c.reportAfterMessage.reset();  // nothing follows a cut message
    if (failure) std::rethrow_exception(failure);
    if (c.left.load()) return;  // the peer destroyed its communicator: it needs nothing more
    throw RemoteError(
        strCat("peer rank ", peer, " closed its tcp connection (it exited or failed): ", e.what()));
  }
  if (!failure) return;
  if (c.reportAfterMessage) {
    sendReport(peer, c, *c.reportAfterMessage);
    c.reportAfterMessage.reset();
  }
  std::rethrow_exception(failure);
}

void TcpTransport::sendReport(int peer, Connection& c, const FailureReport& report) {
  const size_t bytes = std::min<size_t>(report.cause.size(), kMaxFailureCause);
  MsgHeader h{static_cast<uint32_t>(MsgType::kFailure), report.culprit, report.timedOut ? 1u : 0u,
              static_cast<uint64_t>(report.reporter), bytes};
  auto stalled = [](std::chrono::steady_clock::duration stalledFor) {
    if (stalledFor < kReportWait) return;
    throw RemoteError(strCat("it read nothing for ", kReportWait.count(), " ms"));
  };
  try {
    c.socket.sendAll(&h, sizeof(h), stalled);
    c.socket.sendAll(report.cause.data(), bytes, stalled);
  } catch (const Error& e) {
    c.closed.store(true);  // the report may have gone in part: nothing may follow it
    CTRAN_INFO("tcp transport: could not tell rank ", peer, " about the failure: ", e.what());
  }
}

void TcpTransport::broadcastFailure(const FailureReport& report) {
  for (size_t p = 0; p < conns_.size(); ++p) {
    Connection* c = conns_[p].get();
    if (!c || c->closed.load()) continue;
    // Published from the stall check of this thread's own send to that peer: the lock is held
    // here, and the report follows the message being sent.
    if (c->sender.load() == std::this_thread::get_id()) {
      c->reportAfterMessage = report;
      continue;
    }
    // Another thread's send holds the lock only while it makes progress: its stall check sees
    // the failure published here, and it lets the lock go once its message is finished or cut.
    std::lock_guard<std::mutex> lock(c->sendMu);
    if (c->closed.load()) {
      CTRAN_INFO("tcp transport: could not tell rank ", p, " about the failure: its connection",
                 " closed");
      continue;
    }
    sendReport(static_cast<int>(p), *c, report);
  }
}

void TcpTransport::beginMessage(int peer, Connection& c) {
  Inbound& in = c.inbound;
  const MsgHeader& h = in.header;
  in.left = h.value;
  if (h.type == static_cast<uint32_t>(MsgType::kFailure)) {
    if (h.value > kMaxFailureCause) {
      throw RemoteError(strCat("tcp transport: a failure message of ", h.value, " bytes from rank ",
                               peer, " (at most ", kMaxFailureCause, ")"));
    }
    in.cause.assign(h.value, '\0');
    in.stage = Inbound::Stage::kCause;
    return;
  }
  const bool isPut = h.type == static_cast<uint32_t>(MsgType::kPut);
  if (!isPut && h.type != static_cast<uint32_t>(MsgType::kSignal)) {
    throw RemoteError(strCat("tcp transport: corrupt message type ", h.type, " from rank ", peer));
  }
  std::lock_guard<std::mutex> lock(regionsMu_);
  auto it = regions_.find(h.windowId);
  const LocalWindow* w = it != regions_.end() ? &it->second : nullptr;
  if (!isPut) {
    if (w != nullptr && h.slot >= 0 && h.slot < w->numSignals) {
      signalAdd(w->signals + h.slot, h.value);
    } else if (w == nullptr && h.windowId < windowsExported_) {
      // Released here: a peer's last acknowledgements, which it does not wait for, arrive
      // after this rank destroyed the window.
      CTRAN_INFO("tcp transport: dropping a signal from rank ", peer, " to window ", h.windowId,
                 ", released here");
    } else {
      CTRAN_WARN("tcp transport: dropping a signal from rank ", peer, " to window ", h.windowId,
                 " slot ", h.slot);
    }
    in = Inbound();  // a signal is its header alone
    return;
  }
  if (w != nullptr && h.offset <= w->bytes && h.value <= w->bytes - h.offset) {
    in.dst = static_cast<char*>(w->data) + h.offset;
    in.stage = Inbound::Stage::kPut;
    c.receivingInto = h.windowId;
  } else {
    // A put to a window released here: drained in bounded chunks, whatever length it claims.
    CTRAN_WARN("tcp transport: dropping a put of ", h.value, " bytes from rank ", peer,
               " to unknown window ", h.windowId, " or beyond its end");
    in.stage = Inbound::Stage::kDrain;
  }
}

void TcpTransport::endMessage(Connection& c) {
  Inbound& in = c.inbound;
  if (in.stage == Inbound::Stage::kCause && failure_) {
    const MsgHeader& h = in.header;
    failure_->adopt({h.slot, static_cast<int>(h.offset), h.windowId == 1, std::move(in.cause)});
  }
  if (in.stage == Inbound::Stage::kPut) stopReceivingInto(c);
  in = Inbound();
}

void TcpTransport::stopReceivingInto(Connection& c) {
  std::lock_guard<std::mutex> lock(regionsMu_);
  c.receivingInto = kNoWindow;
  receiveDone_.notify_all();
}

size_t TcpTransport::receivePayload(Connection& c, size_t budget, bool* closed) {
  Inbound& in = c.inbound;
  size_t want = static_cast<size_t>(std::min<uint64_t>(in.left, budget));
  char* into = nullptr;
  switch (in.stage) {
    case Inbound::Stage::kPut: into = in.dst; break;
    case Inbound::Stage::kCause: into = in.cause.data() + (in.cause.size() - in.left); break;
    default:
      drainSink_.resize(kDrainChunk);
      want = std::min(want, drainSink_.size());
      into = drainSink_.data();
  }
  const size_t n = want > 0 ? c.socket.recvReady(into, want, closed) : 0;
  if (in.stage == Inbound::Stage::kPut) in.dst += n;
  in.left -= n;
  return n;
}

bool TcpTransport::receiveReady(int peer, Connection& c) {
  Inbound& in = c.inbound;
  try {
    for (size_t budget = kReadBudget; budget > 0;) {
      bool closed = false;
      size_t n = 0;
      if (in.stage == Inbound::Stage::kHeader) {
        n = c.socket.recvReady(reinterpret_cast<char*>(&in.header) + in.headerGot,
                               sizeof(MsgHeader) - in.headerGot, &closed);
        if (closed && in.headerGot == 0) return false;  // between messages: the peer exited
        in.headerGot += n;
        if (in.headerGot == sizeof(MsgHeader)) {
          if (in.header.type == static_cast<uint32_t>(MsgType::kClose)) {
            // Set before the caller sets `closed`, which checkPeer reads first.
            c.left.store(true);
            return false;
          }
          beginMessage(peer, c);
        }
      } else {
        n = receivePayload(c, budget, &closed);
      }
      if (closed) throw RemoteError("connection closed by the peer in the middle of a message");
      if (in.stage != Inbound::Stage::kHeader && in.left == 0) endMessage(c);
      if (n == 0) return true;  // the socket holds nothing more for now
      budget -= std::min(budget, n);
    }
    return true;
  } catch (...) {
    if (in.stage == Inbound::Stage::kPut) stopReceivingInto(c);
    throw;
  }
}

void TcpTransport::progressLoop() {
  std::vector<int> peerOf;
  std::vector<pollfd> fds;
  fds.push_back({wakeFds_[0], POLLIN, 0});
  peerOf.push_back(-1);
  for (size_t p = 0; p < conns_.size(); ++p) {
    if (!conns_[p]) continue;
    fds.push_back({conns_[p]->socket.fd(), POLLIN, 0});
    peerOf.push_back(static_cast<int>(p));
  }
  for (;;) {
    int rc = ::poll(fds.data(), fds.size(), -1);
    if (rc < 0) {
      if (errno == EINTR) continue;
      CTRAN_WARN("tcp transport: poll failed, errno ", errno);
      return;
    }
    if (fds[0].revents) return;  // destroy
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int peer = peerOf[i];
      Connection& c = *conns_[peer];
      bool open = false;
      try {
        open = receiveReady(peer, c);
      } catch (const Error& e) {
        CTRAN_WARN("tcp transport: connection to rank ", peer, " failed: ", e.what());
      }
      if (!open) {
        c.closed.store(true);
        fds[i].fd = -1;  // poll ignores negative fds
        if (c.left.load()) {
          // Nothing this rank sends may matter to a peer that destroyed its communicator; the
          // end of file lets it close at once (a send under way ends, and is dropped).
          c.socket.shutdownWrite();
          CTRAN_INFO("tcp transport: rank ", peer, " destroyed its communicator");
        } else {
          CTRAN_INFO("tcp transport: rank ", peer, " disconnected");
        }
      }
    }
  }
}

}  // namespace ctran
