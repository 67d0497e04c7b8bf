// Thin RAII wrappers over blocking TCP sockets, used by the TCP store and the tcp transport.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "ctran/wait.hpp"

namespace ctran {

/// An IPv4/IPv6 address and port in printable form ("10.0.0.2", 29500).
struct SocketAddress {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

/// A connected stream socket. Move-only; closes on destruction.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& o) noexcept : fd_(o.fd_), sendTimeoutMs_(o.sendTimeoutMs_) { o.fd_ = -1; }
  Socket& operator=(Socket&& o) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

  /// Connects, retrying refused connections until the deadline (the server may start later).
  static Socket connect(const SocketAddress& addr, const Deadline& deadline);

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close();
  /// Shuts both directions down (unblocks a thread reading it) without closing the fd.
  void shutdown();
  /// Shuts the sending direction down: the peer reads what was sent, then an end of file.
  void shutdownWrite();

  /// Writes all bytes; throws RemoteError when the peer is gone, or when a send timeout is set
  /// and no byte could be sent for that long. `whileStalled`, if set, is called each time a
  /// send waited one slice of the timeout (20 ms) without progress, with how long the send has
  /// made none; what it throws ends the send, possibly in the middle of a message.
  using StallCheck = std::function<void(std::chrono::steady_clock::duration stalledFor)>;
  void sendAll(const void* data, size_t bytes, const StallCheck& whileStalled = {});
  /// Bounds how long sendAll may make no progress; 0: forever.
  void setSendTimeout(int64_t ms);
  /// Reads exactly `bytes`; returns false on a clean EOF before the first byte, throws on a
  /// partial message, an error, or when `deadline` (if given) passes.
  bool recvAll(void* data, size_t bytes, const Deadline* deadline = nullptr);
  /// Reads what is ready, up to `bytes`, without blocking; 0 when nothing is. When the peer
  /// closed the connection: sets `*closed` and returns 0, or without `closed` throws
  /// RemoteError (as on an error).
  size_t recvReady(void* data, size_t bytes, bool* closed = nullptr);
  /// Address this end is bound to (the interface that reaches the peer).
  SocketAddress localAddress() const;
  /// Address of the other end.
  SocketAddress peerAddress() const;

 private:
  int fd_ = -1;
  int64_t sendTimeoutMs_ = 0;
};

/// A listening socket.
class Listener {
 public:
  /// Binds to `host` ("" or "0.0.0.0": every IPv4 interface, "::": every interface) and `port`
  /// (0: any free port), and listens with a queue of `backlog` connections (default
  /// RCCLX_MAX_PENDING_CONNECTIONS).
  Listener(const std::string& host, int port, int backlog = -1);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  int port() const { return port_; }
  int fd() const { return fd_; }
  /// Blocks until a connection arrives; returns an invalid Socket once shutdown() was called
  /// (or, after setNonBlocking(), when none is waiting).
  Socket accept();
  /// Makes accept() return at once when no connection is waiting (for servers that poll).
  void setNonBlocking();
  void shutdown();

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// The address other hosts reach this process at: RCCLX_BOOTSTRAP_ADDR, else the first
/// non-loopback IPv4 interface address, else 127.0.0.1.
std::string advertisedHost();

/// The address a server that peers reach at `advertised` listens on: RCCLX_LISTEN_ADDR when
/// set, else `advertised` itself (its interface only).
std::string listenHost(const std::string& advertised);

/// Parses "host:port"; throws InvalidArgument naming `what` on malformed input.
SocketAddress parseAddress(const std::string& text, const char* what);

}  // namespace ctran
