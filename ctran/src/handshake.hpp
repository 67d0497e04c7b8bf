// The opening exchange of every TCP connection of a job, store and tcp transport alike.
//
// The client sends a fixed hello: magic "RCCLXHLO", u32 protocol version, u32 channel (store or
// transport), i32 rank (-1 when it has none), u32 zero, then the 16 bytes of the job's secret.
// The server answers magic, its version and a verdict (accepted or why not), or, when the first
// eight bytes are not the magic, closes without a word. Future versions keep magic and version
// first, so any two versions can tell each other apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ctran/secret.hpp"
#include "socket.hpp"

namespace ctran::handshake {

constexpr uint32_t kProtocolVersion = 2;
constexpr size_t kHelloBytes = 40;

/// Which server a connection is meant for (a store client knocking on a transport port is
/// refused as a stranger would be).
enum class Channel : uint32_t { kStore = 1, kTransport = 2 };
const char* channelName(Channel c);

/// What an accepted client said about itself.
struct Hello {
  Channel channel = Channel::kStore;
  int32_t rank = -1;
};

/// Client side: sends the hello presenting `secret` on `channel` as `rank`.
void sendHello(Socket& s, Channel channel, int32_t rank, const JobSecret& secret);
/// Client side: waits for the server's verdict on the hello until `deadline`. Throws
/// RemoteError naming `server` and the reason when refused, TimeoutError when the server does
/// not answer in time.
void awaitVerdict(Socket& s, Channel channel, const std::string& server, const Deadline& deadline);
/// sendHello, then awaitVerdict.
void present(Socket& s, Channel channel, int32_t rank, const JobSecret& secret,
             const std::string& server, const Deadline& deadline);

/// Server side, for servers that poll many sockets: collects one client's hello without
/// blocking, then judges it.
class Pending {
 public:
  /// Reads what `s` has ready. Returns true once the hello is complete; throws RemoteError
  /// as soon as the bytes so far cannot be a hello (bad magic, other version) or the client
  /// hung up.
  bool feed(Socket& s);
  /// Judges the complete hello: answers the verdict and returns the hello when accepted;
  /// otherwise answers why (best effort) and throws RemoteError saying what was wrong (never
  /// the secret).
  Hello judge(Socket& s, Channel channel, const JobSecret& secret);

 private:
  uint8_t buf_[kHelloBytes] = {};
  size_t got_ = 0;
};

/// Server side, blocking: feed() until the hello is complete or `deadline` passes (then
/// TimeoutError), then judge().
Hello accept(Socket& s, Channel channel, const JobSecret& secret, const Deadline& deadline);

/// The deadline of one handshake: RCCLX_HANDSHAKE_TIMEOUT_MS from now.
Deadline deadline();

}  // namespace ctran::handshake
