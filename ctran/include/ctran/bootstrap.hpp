// Bootstrap: how N processes find each other and exchange small control data.
//
// Three ways in: an NCCL-style 128-byte unique id naming a TCP store server that the id's
// creator hosts; the torchrun environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE); or any
// Store. On top of the store it offers allgather of small blobs, barrier and point-to-point
// control messages. It is for setup, not for data: every call is a store round trip.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctran/store.hpp"

namespace ctran {

/// Opaque 128 bytes (NCCL_UNIQUE_ID_BYTES) naming a bootstrap root's store address and
/// carrying the job's secret (whoever holds the id can join the job: share it as a password).
struct UniqueId {
  std::array<uint8_t, 128> bytes{};
};

/// Unique ids this process made and has not joined that it keeps serving at most (see
/// createUniqueId).
constexpr size_t kMaxUnjoinedIds = 64;

/// Starts a TCP store server in this process and returns an id naming it. The server lives
/// until the last Bootstrap of this process that joined through the id is destroyed (a failed
/// join counts: the id is spent). An id this process never joins (one handed to other
/// processes) is served until the process exits, except that beyond kMaxUnjoinedIds of them the
/// oldest that no process is connected to are released.
UniqueId createUniqueId();
/// Stops serving an id this process made and has not joined (a no-op for any other id): for
/// an initialisation that failed before joining it.
void releaseUniqueId(const UniqueId& id);
/// Validates an id and returns "host:port" it names; throws InvalidArgument if malformed.
std::string describeUniqueId(const UniqueId& id);
/// The job secret an id carries (validates it first).
JobSecret uniqueIdSecret(const UniqueId& id);

/// One rank's membership in a group of `nranks` processes.
class Bootstrap {
 public:
  /// Joins through `store`; keys are namespaced by `prefix`. Checks rank and nranks, and that
  /// no other process joined as the same rank. The group's tcp connections present `secret`;
  /// without one, rank 0 draws a secret and shares it through the store. `hostedServer` is the
  /// server behind `store` when this process hosts it: the bootstrap keeps it open, and when a
  /// wait for a peer fails here, the ranks still waiting in the store are told why once it
  /// closes (TcpStoreServer::leaveFarewell) instead of seeing only their connection close.
  Bootstrap(std::shared_ptr<Store> store, int rank, int nranks, std::string prefix = "",
            std::optional<JobSecret> secret = std::nullopt,
            std::shared_ptr<TcpStoreServer> hostedServer = nullptr);
  ~Bootstrap();

  /// Joins the group named by `id` (the process that created the id must be alive).
  static std::unique_ptr<Bootstrap> fromUniqueId(const UniqueId& id, int rank, int nranks);
  /// Joins from MASTER_ADDR / MASTER_PORT / RANK / WORLD_SIZE. Rank 0 hosts the store on
  /// MASTER_ADDR's interface, on RCCLX_BOOTSTRAP_PORT when set, else under torchrun
  /// (TORCHELASTIC_USE_AGENT_STORE=True) on a free port it announces through torchrun's store at
  /// MASTER_ADDR:MASTER_PORT, else on MASTER_PORT + 1. The secret is RCCLX_JOB_SECRET (unset:
  /// the store admits any client).
  static std::unique_ptr<Bootstrap> fromEnv();

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  Store& store() { return *store_; }
  std::shared_ptr<Store> sharedStore() { return store_; }
  const std::string& prefix() const { return prefix_; }
  /// The host address to advertise for connections from peers (see advertisedHost()).
  const std::string& localHost() const { return localHost_; }
  /// The secret the group's tcp connections present to each other.
  const JobSecret& secret() const { return secret_; }

  /// Every rank contributes one blob; returns all blobs indexed by rank.
  std::vector<Bytes> allGather(const Bytes& mine);
  /// Returns when every rank has entered.
  void barrier();
  /// Sends a small control message to `peer` (ordered per pair). The message lives in the
  /// store: a process hosting the store must not exit before its messages were received
  /// (allGather and barrier wait for that themselves).
  void send(int peer, const Bytes& message);
  /// Receives the next control message from `peer`.
  Bytes recv(int peer);

  /// Collective, at the group's orderly end (no bootstrap call after it): erases what this
  /// bootstrap left in the store (each rank's join and size records, the secret rank 0 shared,
  /// the last call's flag), so a long-lived store does not grow with every communicator
  /// created and destroyed. Ranks of the process hosting the store wait until every rank was
  /// here (up to the timeout, or until `check` throws: a rank known gone will not come), the
  /// others return at once. Never throws: a store already gone keeps the records (logged at
  /// INFO).
  void close(const std::function<void()>& check = nullptr);

  /// Collective over `ranks` only (the others need not call): checks that every listed rank
  /// passed the same `value` under the same `tag` (unique among the group's calls), so that a
  /// sub-group is never built from lists its members disagree on. Every listed rank that calls
  /// it throws the same InvalidArgument, naming both values, when two of them differ (a rank
  /// that waits for a record meets the disagreement another one found); a listed rank that
  /// never calls it is a TimeoutError. `what` names the value in messages ("shrink: ranks").
  void agreeAmong(const std::vector<int>& ranks, const std::string& tag, const std::string& value,
                  const std::string& what);

  /// A bootstrap for the sub-group `ranks` (global ranks, in their new order) that this rank
  /// belongs to; `tag` must be the same on all members and unique among the group's splits.
  std::unique_ptr<Bootstrap> subgroup(const std::vector<int>& ranks, const std::string& tag);

  /// From now on, a wait for what a peer writes (allGather, barrier, recv, agreeAmong) calls
  /// `check(peer)` every kWatchPeriodMs (-1 when it waits for several ranks at once), so a
  /// dead peer ends it at once instead of at the timeout; `check` throws to end it. Set by the
  /// peer group once its transports, which see peers die, are up.
  void watchPeers(std::function<void(int peer)> check);
  static constexpr int64_t kWatchPeriodMs = 50;

 private:
  std::string key(const std::string& k) const { return prefix_ + k; }
  void checkPeer(int peer, const char* what) const;
  /// Called at the end of a collective call `op` whose store keys are `keys`; see
  /// bootstrap.cpp.
  void waitForReaders(const std::string& op, const std::vector<std::string>& keys);
  /// `call()` on the store during a wait for `peer`; when the store is gone (RemoteError but
  /// no timeout), the peer watch raises first if the group knows of a failure.
  template <typename Call>
  auto onStore(int peer, Call&& call);
  /// store_->get(k, deadline), calling the peer watch for `peer` between short waits.
  Bytes awaitRecord(const std::string& k, const Deadline& deadline, int peer);
  /// awaitRecord for a record the group cannot go on without: a timeout is rethrown as
  /// "`context` (absentRanks): ...", and any failure is also the hosted server's farewell.
  Bytes awaitPeer(const std::string& k, const Deadline& deadline, int peer,
                  const std::string& context);
  /// " (ranks 1, 3 have not joined the group)" for the ranks other than `besides` that never
  /// joined, so that a rank waiting on one that waits on them still names them; "" when all
  /// have (or the store cannot tell).
  std::string absentRanks(int besides) const;

  // Declared first so that it closes after this bootstrap's own connection to it.
  std::shared_ptr<TcpStoreServer> hostedServer_;  // set when this copy of ctran made the store
  std::shared_ptr<Store> store_;
  bool hostsStore_ = false;  // this process hosts the store (see waitForReaders)
  int rank_;
  int nranks_;
  std::string prefix_;
  std::string localHost_;
  JobSecret secret_;
  std::string lastAllRead_;  // the "all read" flag of the last allGather / barrier
  uint64_t allGatherSeq_ = 0;
  uint64_t barrierSeq_ = 0;
  std::vector<uint64_t> sendSeq_;
  std::vector<uint64_t> recvSeq_;
  std::function<void(int)> watch_;  // see watchPeers
};

}  // namespace ctran
