// A client of torch.distributed's TCPStore, as much of it as a bootstrap needs to meet through
// the store a torchrun agent hosts for its workers (TORCHELASTIC_USE_AGENT_STORE=True).
#pragma once

#include <cstdint>
#include <string>

#include "../socket.hpp"
#include "ctran/store.hpp"

namespace ctran {

/// One connection to a torch TCPStore server (either of torch's back-ends speaks the same
/// protocol). Not thread-safe.
class TorchStoreClient {
 public:
  /// Connects (retrying refused connections until `deadline`) and opens the session.
  TorchStoreClient(const SocketAddress& addr, const Deadline& deadline);

  /// Stores `value` under `key`.
  void set(const std::string& key, const Bytes& value);
  /// Waits until `key` exists (TimeoutError at `deadline`), then returns its value.
  Bytes get(const std::string& key, const Deadline& deadline);
  /// Adds `delta` to the integer under `key` (0 when absent) and returns the sum.
  int64_t add(const std::string& key, int64_t delta, const Deadline& deadline);

 private:
  SocketAddress addr_;
  Socket socket_;
};

}  // namespace ctran
