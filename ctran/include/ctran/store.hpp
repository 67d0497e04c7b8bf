// Rendezvous stores: a small key-value service the ranks of a job meet through.
//
// Implementations: TcpStore (a client of TcpStoreServer, which one process hosts), FileStore (a
// directory on a shared file system), MemoryStore (one process, for tests), and, in the Python
// module, an adapter that lets any object with set/get/add (a torch.distributed Store) serve.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/secret.hpp"
#include "ctran/wait.hpp"

namespace ctran {

using Bytes = std::vector<uint8_t>;

/// Key-value rendezvous. Thread-safe. `get` blocks until the key exists or the deadline passes.
class Store {
 public:
  virtual ~Store() = default;
  /// Stores `value` under `key`, replacing any previous value.
  virtual void set(const std::string& key, const Bytes& value) = 0;
  /// Waits until `key` exists, then returns its value; throws TimeoutError at the deadline.
  virtual Bytes get(const std::string& key, const Deadline& deadline) = 0;
  /// Atomically adds `delta` to the integer stored under `key` (0 when absent); returns the sum.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// True when `key` exists now.
  virtual bool check(const std::string& key) = 0;
  /// Removes `key` if present.
  virtual void erase(const std::string& key) = 0;
};

/// The server side of TcpStore: a thread-per-client key-value service on a TCP port. It admits
/// only clients that present `secret` (any client when it is empty), and refuses others with a
/// warning in the log while it goes on serving.
class TcpStoreServer {
 public:
  /// Listens on `host` (RCCLX_LISTEN_ADDR overrides it; empty: every interface) and `port` (0:
  /// any free port).
  explicit TcpStoreServer(int port = 0, const std::string& host = "",
                          const JobSecret& secret = JobSecret::fromKnob());
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  int port() const;
  /// Has the clients still waiting in a get when the server closes told that its host gave up
  /// because of `reason` (they throw an error of the same kind, TimeoutError or RemoteError,
  /// quoting it) instead of only seeing the connection close.
  void leaveFarewell(const RemoteError& reason);
  /// How many clients are connected now (strangers still in their handshake included).
  int connectedClients() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A client of TcpStoreServer. A get that times out leaves the connection usable; a lost
/// connection makes every later call throw RemoteError.
class TcpStore : public Store {
 public:
  /// Connects to host:port, retrying until `deadline` (the server may start later), and
  /// presents `secret`; throws RemoteError when the server refuses it.
  TcpStore(const std::string& host, int port, const Deadline& deadline,
           const JobSecret& secret = JobSecret::fromKnob());
  ~TcpStore() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, const Deadline& deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::string& key) override;
  void erase(const std::string& key) override;
  /// The local address of the connection (the interface that reaches the server).
  std::string localHost() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// A store kept as files in a directory every rank can see (one file per key).
class FileStore : public Store {
 public:
  explicit FileStore(std::string directory);
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, const Deadline& deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::string& key) override;
  void erase(const std::string& key) override;
  const std::string& directory() const { return dir_; }

 private:
  std::string pathOf(const std::string& key) const;
  std::string dir_;
};

/// A store inside one process (ranks as threads, and unit tests).
class MemoryStore : public Store {
 public:
  MemoryStore();
  ~MemoryStore() override;
  void set(const std::string& key, const Bytes& value) override;
  Bytes get(const std::string& key, const Deadline& deadline) override;
  int64_t add(const std::string& key, int64_t delta) override;
  bool check(const std::string& key) override;
  void erase(const std::string& key) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Namespaces every key of an underlying store with "prefix/".
class PrefixStore : public Store {
 public:
  PrefixStore(std::shared_ptr<Store> base, std::string prefix)
      : base_(std::move(base)), prefix_(std::move(prefix) + "/") {}
  void set(const std::string& k, const Bytes& v) override { base_->set(prefix_ + k, v); }
  Bytes get(const std::string& k, const Deadline& d) override { return base_->get(prefix_ + k, d); }
  int64_t add(const std::string& k, int64_t d) override { return base_->add(prefix_ + k, d); }
  bool check(const std::string& k) override { return base_->check(prefix_ + k); }
  void erase(const std::string& k) override { base_->erase(prefix_ + k); }

 private:
  std::shared_ptr<Store> base_;
  std::string prefix_;
};

}  // namespace ctran
