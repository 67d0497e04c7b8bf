// TcpStoreServer and TcpStore: a length-prefixed request/reply protocol over TCP.
//
// Request: u8 op | u32 key length | key | u64 value length | value.
// A GET's value is its i64 timeout in milliseconds (absent: no limit).
// Replies: SET/ERASE -> u8 ack; GET -> u64 length | value once the key exists, or the length
// kGetTimedOut alone when the timeout passed first (the connection stays usable);
// ADD -> i64 new value; CHECK -> u8 present.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "../socket.hpp"
#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "ctran/store.hpp"

namespace ctran {
namespace {

enum class Op : uint8_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kErase = 5 };

constexpr uint32_t kMaxKeyBytes = 1 << 16;
constexpr uint64_t kMaxValueBytes = uint64_t{1} << 30;
constexpr uint64_t kGetTimedOut = ~uint64_t{0};
// How long past its deadline a client waits for the server's timed-out reply before it gives
// the connection up (the server, not the client, decides that a get timed out).
constexpr int64_t kReplyGraceMs = 5000;

void sendRequest(Socket& s, Op op, const std::string& key, const void* value, uint64_t vlen) {
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
struct TcpStoreServer::Impl {
  Listener listener;
  std::mutex mu;
  std::condition_variable changed;
  std::map<std::string, Bytes> data;
  bool stopping = false;
  std::vector<std::thread> clients;
  std::vector<Socket*> sockets;
  std::thread acceptor;

  explicit Impl(int port) : listener(port) {
    acceptor = std::thread([this] { acceptLoop(); });
  }

  void acceptLoop() {
    for (;;) {
      Socket s = listener.accept();
      std::lock_guard<std::mutex> lock(mu);
      if (!s.valid() || stopping) return;
      auto* owned = new Socket(std::move(s));
      sockets.push_back(owned);
      clients.emplace_back([this, owned] { serve(*owned); });
    }
  }

  // Serves one client until it disconnects or the server stops.
  void serve(Socket& s) {
    try {
      for (;;) {
        uint8_t op = 0;
        if (!s.recvAll(&op, 1)) return;
        uint32_t klen = 0;
        s.recvAll(&klen, 4);
        if (klen > kMaxKeyBytes) return;
        std::string key(klen, '\0');
        s.recvAll(key.data(), klen);
        uint64_t vlen = 0;
        s.recvAll(&vlen, 8);
        if (vlen > kMaxValueBytes) return;
        Bytes value(vlen);
        if (vlen) s.recvAll(value.data(), vlen);
        if (!handle(s, static_cast<Op>(op), key, std::move(value))) return;
      }
    } catch (const Error&) {
      // The client went away; its thread ends.
    }
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
        Bytes out;
        {
          std::unique_lock<std::mutex> lock(mu);
          auto ready = [&] { return stopping || data.count(key) != 0; };
          if (value.size() == 8) {
            int64_t timeoutMs = 0;
            std::memcpy(&timeoutMs, value.data(), 8);
            auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
            if (!changed.wait_until(lock, until, ready)) {
              lock.unlock();
              s.sendAll(&kGetTimedOut, 8);
              return true;
            }
          } else {
            changed.wait(lock, ready);
          }
          if (stopping) return false;
          out = data[key];
        }
        uint64_t n = out.size();
        s.sendAll(&n, 8);
        if (n) s.sendAll(out.data(), n);
        return true;
      }
      case Op::kAdd: {
        int64_t delta = 0;
        if (value.size() != 8) return false;
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
    {
      std::lock_guard<std::mutex> lock(mu);
      stopping = true;
      for (auto* s : sockets) s->shutdown();
    }
    changed.notify_all();
    listener.shutdown();
    acceptor.join();
    for (auto& t : clients) t.join();
    for (auto* s : sockets) delete s;
  }
};

TcpStoreServer::TcpStoreServer(int port) : impl_(std::make_unique<Impl>(port)) {}
TcpStoreServer::~TcpStoreServer() = default;
int TcpStoreServer::port() const { return impl_->listener.port(); }

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

  void recvOrFail(void* p, size_t n, const Deadline* d) {
    if (!socket.recvAll(p, n, d)) {
      throw RemoteError("the server closed the connection");
    }
  }
};

TcpStore::TcpStore(const std::string& host, int port, const Deadline& deadline)
    : impl_(std::make_unique<Impl>()) {
  impl_->server = SocketAddress{host, port};
  impl_->socket = Socket::connect(impl_->server, deadline);
}

TcpStore::~TcpStore() = default;

void TcpStore::set(const std::string& key, const Bytes& value) {
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
