// Implementation of socket.hpp.
#include "socket.hpp"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"

namespace ctran {

Socket& Socket::operator=(Socket&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    sendTimeoutMs_ = o.sendTimeoutMs_;
    o.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void Socket::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

void Socket::shutdownWrite() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
}

Socket Socket::connect(const SocketAddress& addr, const Deadline& deadline) {
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  std::string port = std::to_string(addr.port);
  int rc = getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    throw InvalidArgument(strCat("cannot resolve address '", addr.host, "': ", gai_strerror(rc)));
  }
  int lastErr = 0;
  int napMs = 1;
  for (;;) {
    for (auto* ai = res; ai; ai = ai->ai_next) {
      int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) {
        lastErr = errno;
        continue;
      }
      // A connection this end closes first keeps its port in TIME_WAIT for a minute; with
      // SO_REUSEADDR on both sides that no longer keeps a listener (a store on a fixed port,
      // say) from binding it.
      int reuse = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, sizeof(reuse));
      if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(res);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return Socket(fd);
      }
      lastErr = errno;
      ::close(fd);
    }
    if (deadline.expired()) {
      freeaddrinfo(res);
      throwTimeout(deadline, strCat("a connection to ", addr.str(),
                                    " (last error: ", std::strerror(lastErr), ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(napMs));
    napMs = std::min(napMs * 2, 100);
  }
}

void Socket::setSendTimeout(int64_t ms) {
  sendTimeoutMs_ = std::max<int64_t>(0, ms);
  // A blocked send() wakes every slice to compare the time since the last progress with the
  // timeout (SO_SNDTIMEO alone restarts with every partial send).
  constexpr int64_t kSliceMs = 20;
  const int64_t slice = sendTimeoutMs_ == 0 ? 0 : std::min(sendTimeoutMs_, kSliceMs);
  struct timeval tv = {static_cast<time_t>(slice / 1000),
                       static_cast<suseconds_t>(slice % 1000 * 1000)};
  CTRAN_SYSCHECK(setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)), "SO_SNDTIMEO");
}

void Socket::sendAll(const void* data, size_t bytes, const StallCheck& whileStalled) {
  const char* p = static_cast<const char*>(data);
  auto progressed = std::chrono::steady_clock::now();
  while (bytes > 0) {
    ssize_t n = ::send(fd_, p, bytes, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (whileStalled) whileStalled(std::chrono::steady_clock::now() - progressed);
        const auto stalled = std::chrono::steady_clock::now() - progressed;
        if (stalled < std::chrono::milliseconds(sendTimeoutMs_)) continue;
        throw RemoteError(strCat("socket send made no progress for ", sendTimeoutMs_,
                                 " ms (the peer stopped reading, or its link is down)"));
      }
      throw RemoteError(strCat("socket send failed: ", std::strerror(errno)));
    }
    progressed = std::chrono::steady_clock::now();
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

bool Socket::recvAll(void* data, size_t bytes, const Deadline* deadline) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < bytes) {
    if (deadline) {
      struct pollfd pfd = {fd_, POLLIN, 0};
      int rc = ::poll(&pfd, 1, 50);
      if (rc < 0 && errno != EINTR) throwSystemError("poll", errno);
      if (rc <= 0) {
        if (deadline->expired()) throwTimeout(*deadline, "a reply on a socket");
        continue;
      }
    }
    ssize_t n = ::recv(fd_, p + got, bytes - got, 0);
    if (n == 0) {
      if (got == 0) return false;
      throw RemoteError("connection closed by the peer in the middle of a message");
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      throw RemoteError(strCat("socket receive failed: ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

size_t Socket::recvReady(void* data, size_t bytes, bool* closed) {
  for (;;) {
    ssize_t n = ::recv(fd_, data, bytes, MSG_DONTWAIT);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0 && closed != nullptr) {
      *closed = true;
      return 0;
    }
    if (n == 0) throw RemoteError("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw RemoteError(strCat("socket receive failed: ", std::strerror(errno)));
  }
}

namespace {

SocketAddress printable(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {};
  SocketAddress out;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    out.port = ntohs(in->sin_port);
  } else {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    out.port = ntohs(in6->sin6_port);
  }
  out.host = host;
  return out;
}

int localPort(int fd) {
  struct sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  CTRAN_SYSCHECK(getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len), "getsockname");
  return printable(ss).port;
}

}  // namespace

SocketAddress Socket::localAddress() const {
  struct sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  CTRAN_SYSCHECK(getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len), "getsockname");
  return printable(ss);
}

SocketAddress Socket::peerAddress() const {
  struct sockaddr_storage ss = {};
  socklen_t len = sizeof(ss);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {"(gone)", 0};
  return printable(ss);
}

Listener::Listener(const std::string& host, int port, int backlog) {
  const std::string bindHost = host.empty() ? "0.0.0.0" : host;
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  struct addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(bindHost.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    throw InvalidArgument(
        strCat("cannot resolve listening address '", bindHost, "': ", gai_strerror(rc)));
  }
  int lastErr = 0;
  for (auto* ai = res; ai && fd_ < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      lastErr = errno;
      continue;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
      fd_ = fd;
    } else {
      lastErr = errno;
      ::close(fd);
    }
  }
  freeaddrinfo(res);
  if (fd_ < 0) {
    std::string hint = lastErr == EADDRNOTAVAIL
                           ? " (not an address of this host; RCCLX_LISTEN_ADDR=0.0.0.0 listens on "
                             "every interface)"
                           : "";
    throwSystemError(strCat("listen on ", bindHost, ":", port, hint), lastErr);
  }
  if (backlog < 0) backlog = static_cast<int>(knob::RCCLX_MAX_PENDING_CONNECTIONS());
  CTRAN_SYSCHECK(::listen(fd_, std::max(1, backlog)), "listen");
  port_ = localPort(fd_);
}

Listener::~Listener() {
  if (fd_ >= 0) ::close(fd_);
}

void Listener::setNonBlocking() {
  int flags = ::fcntl(fd_, F_GETFL);
  CTRAN_SYSCHECK(flags, "fcntl");
  CTRAN_SYSCHECK(::fcntl(fd_, F_SETFL, flags | O_NONBLOCK), "fcntl");
}

void Listener::shutdown() {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Socket Listener::accept() {
  for (;;) {
    int fd = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return Socket(fd);
    }
    if (errno == EINTR || errno == ECONNABORTED) continue;
    return Socket();  // shut down (EINVAL) or fatal: the caller stops accepting
  }
}

std::string listenHost(const std::string& advertised) {
  std::string forced = knob::RCCLX_LISTEN_ADDR();
  return forced.empty() ? advertised : forced;
}

std::string advertisedHost() {
  std::string forced = knob::RCCLX_BOOTSTRAP_ADDR();
  if (!forced.empty()) return forced;
  struct ifaddrs* ifs = nullptr;
  std::string found = "127.0.0.1";
  if (getifaddrs(&ifs) == 0) {
    for (auto* i = ifs; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
      if (i->ifa_flags & IFF_LOOPBACK) continue;
      if (!(i->ifa_flags & IFF_UP)) continue;
      char buf[INET_ADDRSTRLEN] = {};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof(buf));
      found = buf;
      break;
    }
    freeifaddrs(ifs);
  }
  return found;
}

SocketAddress parseAddress(const std::string& text, const char* what) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    throw InvalidArgument(strCat(what, " '", text, "' is not of the form host:port"));
  }
  SocketAddress a;
  a.host = text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  }
  try {
    a.port = std::stoi(text.substr(colon + 1));
  } catch (const std::exception&) {
    throw InvalidArgument(strCat(what, " '", text, "' has no valid port"));
  }
  if (a.port <= 0 || a.port > 65535) {
    throw InvalidArgument(strCat(what, " '", text, "': port ", a.port, " is out of range"));
  }
  return a;
}

}  // namespace ctran
