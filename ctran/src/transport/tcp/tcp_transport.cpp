// Implementation of tcp_transport.hpp.
#include "tcp_transport.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "../../handshake.hpp"
#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"

namespace ctran {
namespace {

// How long releaseWindow waits for a put being received into the window to end.
constexpr int64_t kReleaseWaitMs = 500;

enum class MsgType : uint32_t { kPut = 1, kSignal = 2, kFailure = 3 };

// A failure message: `slot` is the culprit, `offset` the reporter, `windowId` 1 for a timeout,
// `value` the cause's bytes.
struct MsgHeader {
  uint32_t type;
  int32_t slot;
  uint64_t windowId;
  uint64_t offset;
  uint64_t value;  // payload bytes (put, failure) or delta (signal)
};

// What a message may make the receiver allocate: a failure's cause at most kMaxFailureCause
// bytes (a longer one is a broken peer); a put that lands nowhere is drained kDrainChunk at a
// time; a signal carries nothing. A put that lands in a window is bounded by the window.
constexpr uint64_t kMaxFailureCause = 4096;
constexpr uint64_t kDrainChunk = 1 << 20;

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
  progress_ = std::thread([this] {
    progressLoop();
    progressDone_.store(true);
  });
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
  // The progress thread sees the wake-up between messages. One blocked reading the rest of a
  // message that will never come (a link cut mid-message) does not: the shutdown ends that
  // read. Not sooner: a shut-down socket that receives resets its peer's connection, which can
  // drop what the peer had not read yet of this rank's last messages.
  constexpr auto kLeaveLoop = std::chrono::milliseconds(200);
  const auto until = std::chrono::steady_clock::now() + kLeaveLoop;
  while (progress_.joinable() && !progressDone_.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  for (auto& c : conns_) {
    if (c) c->socket.shutdown();
  }
  if (progress_.joinable()) progress_.join();
  ::close(wakeFds_[0]);
  ::close(wakeFds_[1]);
}

Bytes TcpTransport::exportWindow(const LocalWindow& window) {
  std::lock_guard<std::mutex> lock(regionsMu_);
  regions_[window.id] = window;
  return {};
}

std::unique_ptr<PeerWindow> TcpTransport::importWindow(int peer, const LocalWindow& mine,
                                                       const Bytes&) {
  return std::make_unique<TcpPeerWindow>(this, peer, mine.id, mine.bytes, mine.numSignals);
}

void TcpTransport::releaseWindow(uint64_t windowId) {
  std::unique_lock<std::mutex> lock(regionsMu_);
  regions_.erase(windowId);
  auto idle = [&] { return receivingInto_ != windowId; };
  if (receiveDone_.wait_for(lock, std::chrono::milliseconds(kReleaseWaitMs), idle)) return;
  // A put in flight into a window being released means its sender is stopped or failed: the
  // receive would otherwise write into memory the caller is about to unmap.
  const int peer = receivingFrom_;
  CTRAN_WARN("tcp transport: a put from rank ", peer, " into window ", windowId,
             " was still arriving when the window was released; closing that connection");
  conns_[peer]->closed.store(true);
  conns_[peer]->socket.shutdown();
  receiveDone_.wait(lock, idle);
}

void TcpTransport::checkPeer(int peer) {
  auto& c = conns_[peer];
  if (c && c->closed.load()) {
    throw RemoteError(
        strCat("peer rank ", peer, " closed its tcp connection (it exited or failed)"));
  }
}

void TcpTransport::sendPut(int peer, uint64_t windowId, size_t offset, const void* src,
                           size_t bytes) {
  checkPeer(peer);
  MsgHeader h{static_cast<uint32_t>(MsgType::kPut), 0, windowId, offset, bytes};
  sendMessage(peer, {{&h, sizeof(h)}, {src, bytes}});
}

void TcpTransport::sendSignal(int peer, uint64_t windowId, int slot, uint64_t delta) {
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
  bool checkFailed = false;
  auto stalled = [&] {
    if (!stallCheck_) return;
    try {
      stallCheck_(peer);
    } catch (...) {
      checkFailed = true;
      throw;
    }
  };
  try {
    for (const auto& [data, bytes] : parts) {
      if (bytes) c.socket.sendAll(data, bytes, stalled);
    }
  } catch (const Error& e) {
    c.closed.store(true);
    if (checkFailed) throw;
    throw RemoteError(
        strCat("peer rank ", peer, " closed its tcp connection (it exited or failed): ", e.what()));
  }
}

void TcpTransport::broadcastFailure(const FailureReport& report) {
  const size_t bytes = std::min<size_t>(report.cause.size(), kMaxFailureCause);
  MsgHeader h{static_cast<uint32_t>(MsgType::kFailure), report.culprit, report.timedOut ? 1u : 0u,
              static_cast<uint64_t>(report.reporter), bytes};
  for (size_t p = 0; p < conns_.size(); ++p) {
    Connection* c = conns_[p].get();
    if (!c || c->closed.load()) continue;
    // This thread's own send to that peer is blocked (it published from the stall check):
    // its lock is held here, and the peer is not reading.
    if (c->sender.load() == std::this_thread::get_id()) continue;
    try {
      std::lock_guard<std::mutex> lock(c->sendMu);
      c->socket.sendAll(&h, sizeof(h));
      c->socket.sendAll(report.cause.data(), bytes);
    } catch (const Error& e) {
      CTRAN_INFO("tcp transport: could not tell rank ", p, " about the failure: ", e.what());
    }
  }
}

bool TcpTransport::handleMessage(int peer, Connection& c) {
  MsgHeader h;
  if (!c.socket.recvAll(&h, sizeof(h))) return false;
  if (h.type == static_cast<uint32_t>(MsgType::kFailure)) {
    if (h.value > kMaxFailureCause) {
      throw RemoteError(strCat("tcp transport: a failure message of ", h.value, " bytes from rank ",
                               peer, " (at most ", kMaxFailureCause, ")"));
    }
    std::string cause(h.value, '\0');
    if (!c.socket.recvAll(cause.data(), cause.size())) return false;
    if (failure_) failure_->adopt({h.slot, static_cast<int>(h.offset), h.windowId == 1, cause});
    return true;
  }
  const bool isPut = h.type == static_cast<uint32_t>(MsgType::kPut);
  LocalWindow w;
  bool known = false;
  bool receiving = false;  // a put into a window of this rank, in its bounds
  {
    std::lock_guard<std::mutex> lock(regionsMu_);
    auto it = regions_.find(h.windowId);
    if (it != regions_.end()) {
      w = it->second;
      known = true;
    }
    receiving = known && isPut && h.offset <= w.bytes && h.value <= w.bytes - h.offset;
    if (receiving) {
      receivingInto_ = h.windowId;
      receivingFrom_ = peer;
    }
  }
  if (isPut) {
    if (receiving) {
      struct Received {  // ends the receive for releaseWindow, also when it throws
        TcpTransport& t;
        ~Received() {
          std::lock_guard<std::mutex> lock(t.regionsMu_);
          t.receivingInto_ = kNoWindow;
          t.receiveDone_.notify_all();
        }
      } received{*this};
      c.socket.recvAll(static_cast<char*>(w.data) + h.offset, h.value);
    } else {
      // A put to a window released here: drained in bounded chunks, whatever length it claims.
      CTRAN_WARN("tcp transport: dropping a put of ", h.value, " bytes from rank ", peer,
                 " to unknown window ", h.windowId, " or beyond its end");
      std::vector<char> sink(std::min<uint64_t>(h.value, kDrainChunk));
      for (uint64_t left = h.value; left > 0;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sink.size()));
        c.socket.recvAll(sink.data(), n);
        left -= n;
      }
    }
  } else if (h.type == static_cast<uint32_t>(MsgType::kSignal)) {
    if (known && h.slot >= 0 && h.slot < w.numSignals) {
      signalAdd(w.signals + h.slot, h.value);
    } else {
      CTRAN_WARN("tcp transport: dropping a signal from rank ", peer, " to window ", h.windowId);
    }
  } else {
    throw RemoteError(strCat("tcp transport: corrupt message type ", h.type, " from rank ", peer));
  }
  return true;
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
        open = handleMessage(peer, c);
      } catch (const Error& e) {
        CTRAN_WARN("tcp transport: connection to rank ", peer, " failed: ", e.what());
      }
      if (!open) {
        c.closed.store(true);
        fds[i].fd = -1;  // poll ignores negative fds
        CTRAN_INFO("tcp transport: rank ", peer, " disconnected");
      }
    }
  }
}

}  // namespace ctran
