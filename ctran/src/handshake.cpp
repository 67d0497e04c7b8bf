// Implementation of handshake.hpp and of JobSecret.
#include "handshake.hpp"

#include <errno.h>
#include <poll.h>
#include <sys/random.h>

#include <cstring>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"

namespace ctran {

JobSecret JobSecret::random() {
  JobSecret s;
  size_t got = 0;
  while (got < kBytes) {
    ssize_t n = ::getrandom(s.bytes.data() + got, kBytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throwSystemError("getrandom", errno);
    got += static_cast<size_t>(n);
  }
  return s;
}

JobSecret JobSecret::fromKnob() {
  std::string hex = knob::RCCLX_JOB_SECRET();
  JobSecret s;
  if (hex.empty()) return s;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  bool ok = hex.size() == 2 * kBytes;
  for (size_t i = 0; ok && i < kBytes; ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    ok = hi >= 0 && lo >= 0;
    s.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  CTRAN_CHECK(ok, InvalidArgument, "RCCLX_JOB_SECRET must be ", 2 * kBytes,
              " hexadecimal digits (it has ", hex.size(),
              " characters); make one with: python -c 'import secrets; print(secrets.token_hex(",
              kBytes, "))'");
  CTRAN_CHECK(!s.empty(), InvalidArgument, "RCCLX_JOB_SECRET must not be all zeros");
  return s;
}

bool JobSecret::empty() const { return matches(JobSecret{}); }

bool JobSecret::matches(const JobSecret& other) const {
  uint8_t diff = 0;
  for (size_t i = 0; i < kBytes; ++i) diff |= bytes[i] ^ other.bytes[i];
  return diff == 0;
}

namespace handshake {
namespace {

constexpr char kMagic[8] = {'R', 'C', 'C', 'L', 'X', 'H', 'L', 'O'};
constexpr size_t kVersionEnd = 12;  // magic and version: what every version agrees on
constexpr size_t kAnswerBytes = 16;

enum class Verdict : uint32_t { kAccepted = 0, kVersion = 1, kSecret = 2, kChannel = 3 };

void answer(Socket& s, Verdict v) {
  uint8_t out[kAnswerBytes];
  std::memcpy(out, kMagic, 8);
  std::memcpy(out + 8, &kProtocolVersion, 4);
  std::memcpy(out + 12, &v, 4);
  s.sendAll(out, sizeof(out));
}

// Answers a refusal when the client can still hear it; the refusal itself is what matters.
void refuse(Socket& s, Verdict v, const std::string& why) {
  try {
    answer(s, v);
  } catch (const Error&) {
  }
  throw RemoteError(why);
}

}  // namespace

const char* channelName(Channel c) {
  switch (c) {
    case Channel::kStore: return "store";
    case Channel::kTransport: return "tcp transport";
  }
  return "unknown channel";
}

void sendHello(Socket& s, Channel channel, int32_t rank, const JobSecret& secret) {
  uint8_t hello[kHelloBytes] = {};
  std::memcpy(hello, kMagic, 8);
  std::memcpy(hello + 8, &kProtocolVersion, 4);
  std::memcpy(hello + 12, &channel, 4);
  std::memcpy(hello + 16, &rank, 4);
  std::memcpy(hello + 24, secret.bytes.data(), JobSecret::kBytes);
  s.sendAll(hello, sizeof(hello));
}

void present(Socket& s, Channel channel, int32_t rank, const JobSecret& secret,
             const std::string& server, const Deadline& deadline) {
  try {
    sendHello(s, channel, rank, secret);
  } catch (const RemoteError& e) {
    throw RemoteError(strCat(channelName(channel), " server ", server,
                             " closed the connection before the handshake: ", e.what()));
  }
  awaitVerdict(s, channel, server, deadline);
}

void awaitVerdict(Socket& s, Channel channel, const std::string& server, const Deadline& deadline) {
  const std::string who = strCat(channelName(channel), " server ", server);
  uint8_t reply[kAnswerBytes];
  try {
    if (!s.recvAll(reply, sizeof(reply), &deadline)) {
      throw RemoteError("it closed the connection without answering");
    }
  } catch (const TimeoutError&) {
    throwTimeout(deadline, strCat("the handshake answer of ", who));
  } catch (const RemoteError& e) {
    throw RemoteError(strCat(who, " refused the connection during the handshake: ", e.what()));
  }
  uint32_t version = 0;
  Verdict verdict;
  std::memcpy(&version, reply + 8, 4);
  std::memcpy(&verdict, reply + 12, 4);
  CTRAN_CHECK(std::memcmp(reply, kMagic, 8) == 0, RemoteError, who,
              " is not an RCCLX server (bad magic in its handshake answer)");
  switch (verdict) {
    case Verdict::kAccepted:
      CTRAN_CHECK(version == kProtocolVersion, RemoteError, who, " speaks protocol version ",
                  version, " but this process version ", kProtocolVersion);
      return;
    case Verdict::kVersion:
      throw RemoteError(strCat(who, " refused the connection: protocol version ", kProtocolVersion,
                               " (this process) vs ", version, " (the server)"));
    case Verdict::kSecret:
      throw RemoteError(strCat(who,
                               " refused the connection: wrong job secret (this process is not "
                               "part of the job that server belongs to; see RCCLX_JOB_SECRET)"));
    case Verdict::kChannel:
      throw RemoteError(
          strCat(who, " refused the connection: it is not a ", channelName(channel), " server"));
  }
  throw RemoteError(
      strCat(who, " answered the handshake with unknown verdict ", static_cast<uint32_t>(verdict)));
}

bool Pending::feed(Socket& s) {
  while (got_ < kHelloBytes) {
    size_t n = s.recvReady(buf_ + got_, kHelloBytes - got_);
    if (n == 0) return false;
    size_t before = got_;
    got_ += n;
    // Judge the stable prefix as soon as it is in: garbage is refused at its eighth byte, not
    // after a timeout.
    if (before < sizeof(kMagic) && got_ >= sizeof(kMagic) &&
        std::memcmp(buf_, kMagic, sizeof(kMagic)) != 0) {
      throw RemoteError("bad magic (not an RCCLX client)");
    }
    if (before < kVersionEnd && got_ >= kVersionEnd) {
      uint32_t version = 0;
      std::memcpy(&version, buf_ + 8, 4);
      if (version != kProtocolVersion) {
        refuse(s, Verdict::kVersion,
               strCat("protocol version ", version, " (client) vs ", kProtocolVersion,
                      " (this process)"));
      }
    }
  }
  return true;
}

Hello Pending::judge(Socket& s, Channel channel, const JobSecret& secret) {
  CTRAN_ASSERT(got_ == kHelloBytes, "judge() before the hello is complete");
  Hello h;
  std::memcpy(&h.channel, buf_ + 12, 4);
  std::memcpy(&h.rank, buf_ + 16, 4);
  JobSecret theirs;
  std::memcpy(theirs.bytes.data(), buf_ + 24, JobSecret::kBytes);
  // The secret first: a stranger learns nothing about the server beyond its version.
  if (!theirs.matches(secret)) refuse(s, Verdict::kSecret, "wrong job secret");
  if (h.channel != channel) {
    refuse(s, Verdict::kChannel,
           strCat("wrong channel ", static_cast<uint32_t>(h.channel), " (this is a ",
                  channelName(channel), " server)"));
  }
  answer(s, Verdict::kAccepted);
  return h;
}

Hello accept(Socket& s, Channel channel, const JobSecret& secret, const Deadline& deadline) {
  Pending p;
  while (!p.feed(s)) {
    struct pollfd pfd = {s.fd(), POLLIN, 0};
    int rc = ::poll(&pfd, 1, 50);
    if (rc < 0 && errno != EINTR) throwSystemError("poll", errno);
    if (rc <= 0 && deadline.expired())
      throwTimeout(deadline, "a complete handshake (RCCLX_HANDSHAKE_TIMEOUT_MS)");
  }
  return p.judge(s, channel, secret);
}

Deadline deadline() { return Deadline::after(knob::RCCLX_HANDSHAKE_TIMEOUT_MS()); }

}  // namespace handshake
}  // namespace ctran
