// TcpStoreServer and TcpStore: a length-prefixed request/reply protocol over TCP.
//
// Every connection opens with the handshake of handshake.hpp (the job's secret); then
// request: u8 op | u32 key length | key | u64 value length | value.
// A GET's value is its i64 timeout in milliseconds (absent: no limit).
// Replies: SET/ERASE -> u8 ack; GET -> u64 length | value once the key exists, or the length
// kGetTimedOut alone when the timeout passed first (the connection stays usable), or, once the
// server is closing and its host left word why, the length kServerGaveUp | u8 timed out |
// u64 length | the host's reason; ADD -> i64 new value; CHECK -> u8 present.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "../handshake.hpp"
#include "../socket.hpp"
#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "ctran/store.hpp"

namespace ctran {
namespace {

enum class Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kErase = 5 };

constexpr uint32_t kMaxKeyBytes = 1 << 16;
constexpr uint64_t kGetTimedOut = ~uint64_t{0};
constexpr uint64_t kServerGaveUp = ~uint64_t{0} - 1;
constexpr uint64_t kMaxFarewellBytes = 1 << 16;
// How long a server whose host gave up goes on answering before it cuts the connections of the
// clients that have not left (ranks busy elsewhere must not hold the host's failure up long).
constexpr auto kFarewellGrace = std::chrono::seconds(1);
// How long past its deadline a client waits for the server's timed-out reply before it gives
// the connection up (the server, not the client, decides that a get timed out).
constexpr int64_t kReplyGraceMs = 5000;

// What a server's host, having given up on its group, has every get told once the server is
// closing: without it the ranks still waiting would learn only that their connection closed.
struct Farewell {
  bool timedOut = false;  ///< the host's failure was a timeout (the clients' is too)
  std::string reason;
};

void sendRequest(Socket& s, Op op, const std::string& key, const void* value, uint64_t vlen) {
  CTRAN_CHECK(key.size() <= kMaxKeyBytes, InvalidArgument, "store key of ", key.size(),
              " bytes is longer than ", kMaxKeyBytes);
  std::vector<uint8_t> msg(1 + 4 + key.size() + 8 + vlen);
  uint8_t* p = msg.data();
  *p++ = static_cast<uint8_t>(op);
  uint32_t klen = static_cast<uint32_t>(key.size());
  std::memcpy(p, &klen, 4);
  p += 4;
  std::memcpy(p, key.data(), key.size());
  p += key.size();
  std::memcpy(p, &vlen, 8);
  p += 8;
  if (vlen) std::memcpy(p, value, vlen);
  s.sendAll(msg.data(), msg.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// One thread per client, so that a client blocked in a get (or a stranger that never finishes
// its handshake) holds up no one else. At most RCCLX_MAX_PENDING_CONNECTIONS clients handshake
// at once; the acceptor waits for a slot before taking the next connection off the kernel's
// queue, which is bounded by the same number.
struct TcpStoreServer::Impl {
  struct Client {
    Socket socket;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  const JobSecret secret;
  const uint64_t maxValueBytes;
  const int maxPending;
  Listener listener;
  std::mutex mu;
  std::condition_variable changed;     // a key was set or added to, or the server stops
  std::condition_variable slotFree;    // a handshake ended, or the server stops
  std::condition_variable clientLeft;  // a client's thread ended (see ~Impl)
  std::map<std::string, Bytes> data;
  bool stopping = false;
  int handshaking = 0;
  std::optional<Farewell> farewell;
  std::list<Client> clients;
  std::thread acceptor;

  Impl(const std::string& host, int port, const JobSecret& s)
      : secret(s),
        maxValueBytes(static_cast<uint64_t>(knob::RCCLX_STORE_MAX_VALUE_BYTES())),
        maxPending(std::max<int>(1, static_cast<int>(knob::RCCLX_MAX_PENDING_CONNECTIONS()))),
        listener(listenHost(host), port) {
    acceptor = std::thread([this] { acceptLoop(); });
  }

  void acceptLoop() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu);
        slotFree.wait(lock, [&] { return stopping || handshaking < maxPending; });
        if (stopping) return;
      }
      Socket s = listener.accept();
      std::lock_guard<std::mutex> lock(mu);
      if (!s.valid() || stopping) return;
      reapFinishedLocked();
      ++handshaking;
      Client& c = clients.emplace_back();
      c.socket = std::move(s);
      c.thread = std::thread([this, &c] { serveClient(c); });
    }
  }

  // Joins the threads of clients that have gone (strangers included), so that a stream of
  // short connections does not pile up threads.
  void reapFinishedLocked() {
    for (auto it = clients.begin(); it != clients.end();) {
      if (it->done.load()) {
        it->thread.join();
        it = clients.erase(it);
      } else {
        ++it;
      }
    }
  }

  void serveClient(Client& c) {
    const SocketAddress peer = c.socket.peerAddress();
    bool admitted = false;
    try {
      handshake::accept(c.socket, handshake::Channel::kStore, secret, handshake::deadline());
      admitted = true;
    } catch (const Error& e) {
      if (!isStopping()) {
        CTRAN_WARN("tcp store: refused a connection from ", peer.str(), ": ", e.what());
      }
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      --handshaking;
    }
    slotFree.notify_one();
    if (admitted) serveRequests(c.socket, peer);
    {
      // Closed now, not when reaped: the client learns at once that it was dropped. Under the
      // lock, so that the destructor's shutdown never meets a recycled descriptor.
      std::lock_guard<std::mutex> lock(mu);
      c.socket.close();
      c.done.store(true);
    }
    clientLeft.notify_all();
  }

  bool isStopping() {
    std::lock_guard<std::mutex> lock(mu);
    return stopping;
  }

  // The value length each request may carry; a request outside it is a broken or hostile
  // client, not a bigger value (clients check the same cap before sending).
  bool valueLengthFits(Op op, uint64_t vlen) const {
    switch (op) {
      case Op::kSet: return vlen <= maxValueBytes;
      case Op::kGet: return vlen == 0 || vlen == 8;
      case Op::kAdd: return vlen == 8;
      case Op::kCheck:
      case Op::kErase: return vlen == 0;
    }
    return false;
  }

  // Serves one admitted client until it disconnects, breaks the protocol, or the server stops.
  void serveRequests(Socket& s, const SocketAddress& peer) {
    try {
      for (;;) {
        uint8_t rawOp = 0;
        if (!s.recvAll(&rawOp, 1)) return;
        auto op = static_cast<Op>(rawOp);
        CTRAN_CHECK(
            rawOp >= static_cast<uint8_t>(Op::kSet) && rawOp <= static_cast<uint8_t>(Op::kErase),
            InvalidArgument, "unknown request ", int{rawOp});
        uint32_t klen = 0;
        s.recvAll(&klen, 4);
        CTRAN_CHECK(klen <= kMaxKeyBytes, InvalidArgument, "a key of ", klen, " bytes (at most ",
                    kMaxKeyBytes, ")");
        std::string key(klen, '\0');
        s.recvAll(key.data(), klen);
        uint64_t vlen = 0;
        s.recvAll(&vlen, 8);
        CTRAN_CHECK(valueLengthFits(op, vlen), InvalidArgument, "a value of ", vlen,
                    " bytes for request ", int{rawOp}, " on key '", key.substr(0, 64), "' (",
                    op == Op::kSet ? strCat("at most RCCLX_STORE_MAX_VALUE_BYTES=", maxValueBytes)
                                   : std::string("not a length it carries"),
                    ")");
        Bytes value(vlen);
        if (vlen) s.recvAll(value.data(), vlen);
        if (!handle(s, op, key, std::move(value))) return;
      }
    } catch (const InvalidArgument& e) {
      CTRAN_WARN("tcp store: dropped client ", peer.str(), ", which sent ", e.what());
    } catch (const Error& e) {
      // The client went away; its thread ends.
      CTRAN_INFO("tcp store: client ", peer.str(), " left: ", e.what());
    }
  }

  static void sendFarewell(Socket& s, const Farewell& word) {
    const std::string reason = word.reason.substr(0, kMaxFarewellBytes);
    const uint8_t timedOut = word.timedOut ? 1 : 0;
    const uint64_t n = reason.size();
    s.sendAll(&kServerGaveUp, 8);
    s.sendAll(&timedOut, 1);
    s.sendAll(&n, 8);
    s.sendAll(reason.data(), n);
  }

  bool handle(Socket& s, Op op, const std::string& key, Bytes value) {
    switch (op) {
      case Op::kSet: {
        {
          std::lock_guard<std::mutex> lock(mu);
          data[key] = std::move(value);
        }
        changed.notify_all();
        uint8_t ack = 1;
        s.sendAll(&ack, 1);
        return true;
      }
      case Op::kGet: {
        std::unique_lock<std::mutex> lock(mu);
        auto ready = [&] { return stopping || data.count(key) != 0; };
        bool found = true;
        if (value.size() == 8) {
          int64_t timeoutMs = 0;
          std::memcpy(&timeoutMs, value.data(), 8);
          auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
          found = changed.wait_until(lock, until, ready);
        } else {
          changed.wait(lock, ready);
        }
        if (stopping) {
          if (!farewell) return false;
          const Farewell word = *farewell;
          lock.unlock();
          sendFarewell(s, word);
          return true;
        }
        if (!found) {
          lock.unlock();
          s.sendAll(&kGetTimedOut, 8);
          return true;
        }
        const Bytes out = data[key];
        lock.unlock();
        uint64_t n = out.size();
        s.sendAll(&n, 8);
        if (n) s.sendAll(out.data(), n);
        return true;
      }
      case Op::kAdd: {
        int64_t delta = 0;
        std::memcpy(&delta, value.data(), 8);
        int64_t sum = 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          Bytes& cur = data[key];
          int64_t old = 0;
          if (cur.size() == 8) std::memcpy(&old, cur.data(), 8);
          sum = old + delta;
          cur.resize(8);
          std::memcpy(cur.data(), &sum, 8);
        }
        changed.notify_all();
        s.sendAll(&sum, 8);
        return true;
      }
      case Op::kCheck: {
        uint8_t present = 0;
        {
          std::lock_guard<std::mutex> lock(mu);
          present = data.count(key) ? 1 : 0;
        }
        s.sendAll(&present, 1);
        return true;
      }
      case Op::kErase: {
        {
          std::lock_guard<std::mutex> lock(mu);
          data.erase(key);
        }
        uint8_t ack = 1;
        s.sendAll(&ack, 1);
        return true;
      }
    }
    return false;
  }

  ~Impl() {
    std::unique_lock<std::mutex> lock(mu);
    stopping = true;
    changed.notify_all();
    slotFree.notify_all();
    listener.shutdown();
    // A host that gave up keeps answering its clients for a moment, the gets with its farewell
    // and the rest as before (a rank whose own wait ran out at the same moment can still read
    // the store to say whom it missed), until every client has left.
    if (farewell) {
      clientLeft.wait_for(lock, kFarewellGrace, [&] {
        return std::all_of(clients.begin(), clients.end(),
                           [](const Client& c) { return c.done.load(); });
      });
    }
    for (auto& c : clients) c.socket.shutdown();
    lock.unlock();
    acceptor.join();
    for (auto& c : clients) c.thread.join();
  }
};

TcpStoreServer::TcpStoreServer(int port, const std::string& host, const JobSecret& secret)
    : impl_(std::make_unique<Impl>(host, port, secret)) {}
TcpStoreServer::~TcpStoreServer() = default;
int TcpStoreServer::port() const { return impl_->listener.port(); }
void TcpStoreServer::leaveFarewell(const RemoteError& reason) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->farewell = Farewell{dynamic_cast<const TimeoutError*>(&reason) != nullptr, reason.what()};
}
int TcpStoreServer::connectedClients() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  int n = 0;
  for (const auto& c : impl_->clients) n += c.done.load() ? 0 : 1;
  return n;
}

// ---------------------------------------------------------------------------------------------
struct TcpStore::Impl {
  SocketAddress server;
  Socket socket;
  std::mutex mu;
  bool broken = false;

  void checkUsable() {
    CTRAN_CHECK(!broken, RemoteError, "store connection to ", server.str(),
                " is unusable after an earlier timeout or failure");
  }

  // Runs one request/reply exchange. Any failure leaves the protocol out of step, so the
  // connection is given up; errors name the server.
  template <typename Fn>
  auto guarded(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mu);
    checkUsable();
    try {
      return fn();
    } catch (const InvalidArgument&) {
      throw;  // a request refused before anything was sent: the connection is still in step
    } catch (const TimeoutError&) {
      broken = true;
      throw;
    } catch (const RemoteError& e) {
      broken = true;
      throw RemoteError(strCat("store server ", server.str(), ": ", e.what()));
    } catch (const Error&) {
      broken = true;
      throw;
    }
  }

  // Reads the rest of a closing server's farewell and throws the error its host gave up with.
  [[noreturn]] void throwFarewell(const Deadline* d) {
    uint8_t timedOut = 0;
    uint64_t n = 0;
    recvOrFail(&timedOut, 1, d);
    recvOrFail(&n, 8, d);
    CTRAN_CHECK(n <= kMaxFarewellBytes, RemoteError, "the server closed with a farewell of ", n,
                " bytes (at most ", kMaxFarewellBytes, ")");
    std::string reason(n, '\0');
    recvOrFail(reason.data(), n, d);
    const std::string message = strCat("its host gave up first and closed it: ", reason);
    if (timedOut) throw TimeoutError(strCat("store server ", server.str(), ": ", message));
    throw RemoteError(message);
  }

  void recvOrFail(void* p, size_t n, const Deadline* d) {
    if (!socket.recvAll(p, n, d)) {
      throw RemoteError("the server closed the connection");
    }
  }
};

TcpStore::TcpStore(const std::string& host, int port, const Deadline& deadline,
                   const JobSecret& secret)
    : impl_(std::make_unique<Impl>()) {
  impl_->server = SocketAddress{host, port};
  impl_->socket = Socket::connect(impl_->server, deadline);
  handshake::present(impl_->socket, handshake::Channel::kStore, -1, secret, impl_->server.str(),
                     deadline);
}

TcpStore::~TcpStore() = default;

void TcpStore::set(const std::string& key, const Bytes& value) {
  const auto cap = static_cast<uint64_t>(knob::RCCLX_STORE_MAX_VALUE_BYTES());
  CTRAN_CHECK(value.size() <= cap, InvalidArgument, "store value for key '", key, "' is ",
              value.size(), " bytes, more than RCCLX_STORE_MAX_VALUE_BYTES=", cap);
  impl_->guarded([&] {
    sendRequest(impl_->socket, Op::kSet, key, value.data(), value.size());
    uint8_t ack;
    impl_->recvOrFail(&ack, 1, nullptr);
    return 0;
  });
}

Bytes TcpStore::get(const std::string& key, const Deadline& deadline) {
  auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline.at() - std::chrono::steady_clock::now());
  int64_t timeoutMs = std::max<int64_t>(0, remaining.count());
  Deadline replyDeadline = Deadline::after(timeoutMs + kReplyGraceMs);
  bool timedOut = false;
  Bytes out = impl_->guarded([&] {
    sendRequest(impl_->socket, Op::kGet, key, &timeoutMs, 8);
    uint64_t n = 0;
    try {
      impl_->recvOrFail(&n, 8, &replyDeadline);
    } catch (const TimeoutError&) {
      throwTimeout(deadline, strCat("store key '", key, "' at ", impl_->server.str(),
                                    " (the server did not answer)"));
    }
    if (n == kGetTimedOut) {
      timedOut = true;
      return Bytes{};
    }
    if (n == kServerGaveUp) impl_->throwFarewell(&replyDeadline);
    Bytes value(n);
    if (n) impl_->recvOrFail(value.data(), n, &replyDeadline);
    return value;
  });
  if (timedOut) throwTimeout(deadline, strCat("store key '", key, "' at ", impl_->server.str()));
  return out;
}

int64_t TcpStore::add(const std::string& key, int64_t delta) {
  return impl_->guarded([&] {
    sendRequest(impl_->socket, Op::kAdd, key, &delta, 8);
    int64_t sum = 0;
    impl_->recvOrFail(&sum, 8, nullptr);
    return sum;
  });
}

bool TcpStore::check(const std::string& key) {
  return impl_->guarded([&] {
    sendRequest(impl_->socket, Op::kCheck, key, nullptr, 0);
    uint8_t present = 0;
    impl_->recvOrFail(&present, 1, nullptr);
    return present != 0;
  });
}

void TcpStore::erase(const std::string& key) {
  impl_->guarded([&] {
    sendRequest(impl_->socket, Op::kErase, key, nullptr, 0);
    uint8_t ack;
    impl_->recvOrFail(&ack, 1, nullptr);
    return 0;
  });
}

std::string TcpStore::localHost() const { return impl_->socket.localAddress().host; }

}  // namespace ctran
