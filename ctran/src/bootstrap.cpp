// Implementation of bootstrap.hpp: unique ids, store-based allgather / barrier / messages.
#include "ctran/bootstrap.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "ctran/topology.hpp"
#include "ctran/wait.hpp"
#include "socket.hpp"
#include "store/torch_store_client.hpp"

namespace ctran {
namespace {

// Unique id layout: magic | u32 port | u32 nonce | host (NUL-padded) | job secret.
constexpr char kIdMagic[8] = {'R', 'C', 'C', 'L', 'X', 'I', 'D', '2'};
constexpr char kIdMagicWithoutSecret[8] = {'R', 'C', 'C', 'L', 'X', 'I', 'D', '1'};
constexpr size_t kIdPortOffset = sizeof(kIdMagic);
constexpr size_t kIdHostOffset = 16;
constexpr size_t kIdHostBytes = 96;
constexpr size_t kIdSecretOffset = kIdHostOffset + kIdHostBytes;
static_assert(kIdSecretOffset + JobSecret::kBytes <= sizeof(UniqueId::bytes),
              "the job secret must fit in the unique id");

// The stores of the unique ids this copy of ctran made, by port. Until a bootstrap of this
// process joins an id, the registry holds its store: the id may be on its way to other
// processes. From then on the bootstraps hold it (a subgroup shares its parent's), so it closes
// with the last of them; the registry only finds it for further joins of this process.
struct HostedStore {
  UniqueId id;
  std::shared_ptr<TcpStoreServer> unjoined;  ///< set until the first join from this process
  std::weak_ptr<TcpStoreServer> server;
  uint64_t made = 0;  ///< creation order, for releasing the oldest unjoined first
};
std::mutex gServersMu;
std::map<int, HostedStore> gServers;
uint64_t gMade = 0;

// Forgets stores that closed, and releases the oldest unjoined ones beyond kMaxUnjoinedIds
// that no client is connected to (an id that is being joined elsewhere is never released).
// Returns the released stores, for the caller to close once it has let go of the lock.
std::vector<std::shared_ptr<TcpStoreServer>> pruneHostedStoresLocked() {
  std::vector<std::shared_ptr<TcpStoreServer>> released;
  std::vector<std::pair<uint64_t, int>> idle;  // (made, port)
  size_t unjoined = 0;
  for (auto it = gServers.begin(); it != gServers.end();) {
    if (it->second.server.expired()) {
      it = gServers.erase(it);
      continue;
    }
    if (it->second.unjoined) {
      ++unjoined;
      if (it->second.unjoined->connectedClients() == 0)
        idle.emplace_back(it->second.made, it->first);
    }
    ++it;
  }
  std::sort(idle.begin(), idle.end());
  for (const auto& [made, port] : idle) {
    if (unjoined <= kMaxUnjoinedIds) break;
    CTRAN_INFO("bootstrap: no longer serving the unique id on port ", port, " (", unjoined,
               " ids of this process were never joined from it, at most ", kMaxUnjoinedIds,
               " are kept; this one is the oldest that no client is connected to)");
    released.push_back(std::move(gServers[port].unjoined));
    gServers.erase(port);
    --unjoined;
  }
  return released;
}

std::string toString(const Bytes& b) { return std::string(b.begin(), b.end()); }
Bytes toBytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

int parseEnvInt(const char* name, const char* v) {
  try {
    size_t used = 0;
    int x = std::stoi(v, &used);
    if (used == std::strlen(v)) return x;
  } catch (const std::exception&) {
  }
  throw InvalidArgument(strCat("environment variable ", name, "='", v, "' is not an integer"));
}

int envInt(const char* name) {
  const char* v = std::getenv(name);
  CTRAN_CHECK(v && *v, InvalidArgument, "environment variable ", name,
              " is not set (bootstrap from the environment needs MASTER_ADDR, MASTER_PORT, RANK,"
              " WORLD_SIZE)");
  return parseEnvInt(name, v);
}

// Where a launcher puts the rank and the world size, first set first: torchrun's, Open MPI's,
// MPICH's and Intel MPI's (PMI), Slurm's (srun).
constexpr const char* kRankSizeVariables[][2] = {{"RANK", "WORLD_SIZE"},
                                                 {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                 {"PMI_RANK", "PMI_SIZE"},
                                                 {"SLURM_PROCID", "SLURM_NTASKS"}};

std::pair<int, int> envRankAndSize() {
  for (const auto& pair : kRankSizeVariables) {
    const char* rank = std::getenv(pair[0]);
    if (rank == nullptr || *rank == '\0') continue;
    return {parseEnvInt(pair[0], rank), envInt(pair[1])};
  }
  throw InvalidArgument(
      "bootstrap from the environment needs the rank and the world size: RANK and WORLD_SIZE "
      "(torchrun), OMPI_COMM_WORLD_RANK / _SIZE (Open MPI), PMI_RANK / PMI_SIZE (MPICH, Intel "
      "MPI) or SLURM_PROCID / SLURM_NTASKS (srun); none is set");
}

// Where rank 0 hosts the store of a bootstrap from the environment: one decision.
struct EnvStorePort {
  int port = 0;             ///< 0: one the kernel picks
  bool agentStore = false;  ///< announced through torchrun's store at MASTER_ADDR:MASTER_PORT
  const char* source = "";  ///< how the port was chosen, for messages
};

// torchrun tells its workers that its agent hosts torch's store at MASTER_ADDR:MASTER_PORT for
// their whole life (torch.distributed reads the same variable).
bool underTorchrunAgentStore() {
  const char* v = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  return v != nullptr && std::strcmp(v, "True") == 0;
}

EnvStorePort envStorePort(int masterPort) {
  EnvStorePort where;
  where.port = static_cast<int>(knob::RCCLX_BOOTSTRAP_PORT());
  if (where.port != 0) {
    where.source = "RCCLX_BOOTSTRAP_PORT";
  } else if (underTorchrunAgentStore()) {
    // A fixed port next to MASTER_PORT is not safe there: torchrun's MASTER_PORT is one the
    // kernel picked, and Linux hands the ports of the other parity to outgoing connections,
    // whose TIME_WAIT holds a port against listeners for a minute after they close.
    where.agentStore = true;
    where.source = "a free port, announced through torchrun's store at MASTER_ADDR:MASTER_PORT";
  } else {
    where.port = masterPort + 1;
    where.source = "MASTER_PORT + 1";
  }
  CTRAN_CHECK(where.agentStore || (where.port > 0 && where.port < 65536), InvalidArgument,
              "bootstrap port ", where.port, " (", where.source, ") is out of range");
  CTRAN_CHECK(!where.agentStore || (masterPort > 0 && masterPort < 65536), InvalidArgument,
              "MASTER_PORT=", masterPort, " is out of range");
  return where;
}

std::shared_ptr<TcpStoreServer> hostEnvStore(const char* host, const EnvStorePort& where,
                                             const JobSecret& secret) {
  std::shared_ptr<TcpStoreServer> server;
  // Listens on MASTER_ADDR's interface only, the one the other ranks reach it at.
  try {
    server = std::make_shared<TcpStoreServer>(where.port, host, secret);
  } catch (const SystemError& e) {
    // The port may be one the user never wrote down: say where it came from.
    throw SystemError(strCat("rank 0 cannot host the bootstrap store on port ", where.port, " (",
                             where.source, "; RCCLX_BOOTSTRAP_PORT picks another): ", e.what()));
  }
  if (secret.empty()) {
    CTRAN_INFO("bootstrap: RCCLX_JOB_SECRET is unset, so the store on ", host, ":", server->port(),
               " admits any client that speaks its protocol");
  }
  return server;
}

// Rank 0 announces `port` (the store it hosts) in torchrun's store; every rank returns it. The
// key counts this rank's bootstraps of the run (in the store, so every copy of this library in
// the process counts alike), which all ranks make in the same order.
int meetThroughAgentStore(const char* host, int masterPort, int rank, int port) {
  const SocketAddress agentAddr{host, masterPort};
  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const std::string run = strCat("rcclx/bootstrap/restart_", restart ? restart : "0", "/");
  const Deadline deadline = Deadline::after();
  try {
    TorchStoreClient agent(agentAddr, deadline);
    const int64_t nth = agent.add(strCat(run, "count/rank_", rank), 1, deadline);
    const std::string key = strCat(run, "port/", nth);
    if (rank == 0) {
      agent.set(key, toBytes(std::to_string(port)));
      return port;
    }
    const std::string announced = toString(agent.get(key, deadline));
    int announcedPort = 0;
    std::sscanf(announced.c_str(), "%d", &announcedPort);
    CTRAN_CHECK(
        announcedPort > 0 && announcedPort < 65536 && announced == std::to_string(announcedPort),
        RemoteError, "torchrun's store at ", agentAddr.str(), " holds '", announced, "' under ",
        key, ", not a port");
    return announcedPort;
  } catch (const TimeoutError& e) {
    throw TimeoutError(
        strCat("bootstrap from the environment: timed out ",
               rank == 0 ? "reaching" : "waiting for rank 0's port in", " torchrun's store at ",
               agentAddr.str(), " (TORCHELASTIC_USE_AGENT_STORE=True): ", e.what()),
        rank == 0 ? -1 : 0);
  }
}

// The store key where a unique id's store names the process hosting it (its processToken()).
// Every copy of this library linked into that process reads the same token, where the server
// registry above is per copy (a Python process may load two extension modules, each with its
// own copy).
constexpr char kHostTokenKey[] = "rcclx/unique_id/host_token";

Bytes tokenBytes(uint64_t token) {
  Bytes b(sizeof(token));
  std::memcpy(b.data(), &token, sizeof(token));
  return b;
}

}  // namespace

UniqueId createUniqueId() {
  const std::string host = advertisedHost();
  CTRAN_CHECK(host.size() < kIdHostBytes, InvalidArgument, "bootstrap address '", host,
              "' is too long for a unique id");
  const JobSecret secret = JobSecret::random();
  auto server = std::make_shared<TcpStoreServer>(0, host, secret);
  UniqueId id;
  std::memcpy(id.bytes.data(), kIdMagic, sizeof(kIdMagic));
  uint32_t port = static_cast<uint32_t>(server->port());
  std::memcpy(id.bytes.data() + kIdPortOffset, &port, 4);
  std::random_device rd;
  uint32_t nonce = rd();
  std::memcpy(id.bytes.data() + 12, &nonce, 4);
  std::memcpy(id.bytes.data() + kIdHostOffset, host.data(), host.size());
  std::memcpy(id.bytes.data() + kIdSecretOffset, secret.bytes.data(), JobSecret::kBytes);
  TcpStore(host, server->port(), Deadline::after(), secret)
      .set(kHostTokenKey, tokenBytes(processToken()));
  std::vector<std::shared_ptr<TcpStoreServer>> released;  // closed outside the lock
  std::lock_guard<std::mutex> lock(gServersMu);
  gServers[server->port()] = HostedStore{id, server, server, gMade++};
  released = pruneHostedStoresLocked();
  return id;
}

void releaseUniqueId(const UniqueId& id) {
  uint32_t port = 0;
  std::memcpy(&port, id.bytes.data() + kIdPortOffset, 4);
  std::shared_ptr<TcpStoreServer> released;  // closed outside the lock
  std::lock_guard<std::mutex> lock(gServersMu);
  auto it = gServers.find(static_cast<int>(port));
  if (it != gServers.end() && it->second.id.bytes == id.bytes)
    released = std::move(it->second.unjoined);
}

std::string describeUniqueId(const UniqueId& id) {
  CTRAN_CHECK(std::memcmp(id.bytes.data(), kIdMagicWithoutSecret, sizeof(kIdMagic)) != 0,
              InvalidArgument,
              "unique id was made by an older RCCLX (one without a job secret); make the id and "
              "join it with the same version");
  CTRAN_CHECK(std::memcmp(id.bytes.data(), kIdMagic, sizeof(kIdMagic)) == 0, InvalidArgument,
              "unique id is not an RCCLX unique id (bad magic bytes)");
  uint32_t port = 0;
  std::memcpy(&port, id.bytes.data() + kIdPortOffset, 4);
  const char* host = reinterpret_cast<const char*>(id.bytes.data() + kIdHostOffset);
  size_t len = strnlen(host, kIdHostBytes);
  CTRAN_CHECK(len > 0 && len < kIdHostBytes && port > 0 && port < 65536, InvalidArgument,
              "unique id is corrupt (host or port out of range)");
  return strCat(std::string(host, len), ":", port);
}

JobSecret uniqueIdSecret(const UniqueId& id) {
  describeUniqueId(id);  // validates
  JobSecret s;
  std::memcpy(s.bytes.data(), id.bytes.data() + kIdSecretOffset, JobSecret::kBytes);
  return s;
}

Bootstrap::Bootstrap(std::shared_ptr<Store> store, int rank, int nranks, std::string prefix,
                     std::optional<JobSecret> secret, std::shared_ptr<TcpStoreServer> hostedServer)
    : hostedServer_(std::move(hostedServer)),
      store_(std::move(store)),
      hostsStore_(hostedServer_ != nullptr),
      rank_(rank),
      nranks_(nranks),
      prefix_(std::move(prefix)) {
  CTRAN_CHECK(store_ != nullptr, InvalidArgument, "bootstrap: store is null");
  CTRAN_CHECK(nranks >= 1, InvalidArgument, "bootstrap: nranks ", nranks, " must be at least 1");
  CTRAN_CHECK(rank >= 0 && rank < nranks, InvalidArgument, "bootstrap: rank ", rank,
              " is out of range for nranks ", nranks);
  if (!prefix_.empty() && prefix_.back() != '/') prefix_ += '/';
  sendSeq_.assign(nranks, 0);
  recvSeq_.assign(nranks, 0);
  localHost_ = advertisedHost();
  if (auto* tcp = dynamic_cast<TcpStore*>(store_.get());
      tcp && knob::RCCLX_BOOTSTRAP_ADDR().empty()) {
    localHost_ = tcp->localHost();  // the interface that reaches the root reaches peers too
  }
  int64_t joined = store_->add(key(strCat("join/", rank)), 1);
  CTRAN_CHECK(joined == 1, InvalidUsage, "bootstrap: rank ", rank,
              " joined twice (another process already uses this rank)");
  // Without a secret of its own, the group's connections use one that rank 0 draws and shares
  // through the store (set before rank 0's size, which every other rank reads first): it is as
  // well kept as the store is.
  if (secret) {
    secret_ = *secret;
  } else if (rank == 0) {
    secret_ = JobSecret::random();
    store_->set(key("job_secret"), Bytes(secret_.bytes.begin(), secret_.bytes.end()));
  }
  store_->set(key(strCat("nranks/", rank)), toBytes(std::to_string(nranks)));
  // Compare with rank 0's (or rank 1's, for rank 0) declared size before any collective step,
  // so a size mismatch is an error and not a hang.
  if (nranks > 1) {
    int other = rank == 0 ? 1 : 0;
    Bytes theirs = awaitPeer(key(strCat("nranks/", other)), Deadline::after(), other,
                             strCat("bootstrap: rank ", other, " did not join"));
    CTRAN_CHECK(toString(theirs) == std::to_string(nranks), InvalidArgument, "bootstrap: rank ",
                rank, " was created with nranks ", nranks, " but rank ", other, " with nranks ",
                toString(theirs));
  }
  if (!secret && rank != 0) {
    Bytes drawn = awaitPeer(key("job_secret"), Deadline::after(), 0,
                            "bootstrap: rank 0 did not share the job secret");
    CTRAN_CHECK(drawn.size() == JobSecret::kBytes, RemoteError,
                "bootstrap: the job secret rank 0 shared through the store is corrupt");
    std::memcpy(secret_.bytes.data(), drawn.data(), JobSecret::kBytes);
  }
  log::setRank(rank);
}

Bootstrap::~Bootstrap() = default;

std::unique_ptr<Bootstrap> Bootstrap::fromUniqueId(const UniqueId& id, int rank, int nranks) {
  SocketAddress addr = parseAddress(describeUniqueId(id), "unique id address");
  // Taken before anything may fail: a failed join releases an id this process made.
  std::shared_ptr<TcpStoreServer> hosted;
  {
    std::lock_guard<std::mutex> lock(gServersMu);
    auto it = gServers.find(addr.port);
    if (it != gServers.end()) {
      hosted = it->second.server.lock();
      it->second.unjoined.reset();
    }
  }
  const JobSecret secret = uniqueIdSecret(id);
  auto store = std::make_shared<TcpStore>(addr.host, addr.port, Deadline::after(), secret);
  auto b = std::make_unique<Bootstrap>(store, rank, nranks, "", secret, hosted);
  b->hostsStore_ = b->hostsStore_ ||
                   (store->check(kHostTokenKey) &&
                    store->get(kHostTokenKey, Deadline::after()) == tokenBytes(processToken()));
  CTRAN_INFO("bootstrap: rank ", rank, "/", nranks, " joined through unique id ", addr.str());
  return b;
}

std::unique_ptr<Bootstrap> Bootstrap::fromEnv() {
  const char* host = std::getenv("MASTER_ADDR");
  CTRAN_CHECK(host && *host, InvalidArgument,
              "environment variable MASTER_ADDR is not set (bootstrap from the environment needs"
              " MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE)");
  const int masterPort = envInt("MASTER_PORT");
  const auto [rank, nranks] = envRankAndSize();
  CTRAN_CHECK(nranks >= 1, InvalidArgument, "WORLD_SIZE=", nranks, " must be at least 1");
  CTRAN_CHECK(rank >= 0 && rank < nranks, InvalidArgument, "RANK=", rank,
              " is out of range for WORLD_SIZE=", nranks);
  const JobSecret secret = JobSecret::fromKnob();
  const EnvStorePort where = envStorePort(masterPort);
  std::shared_ptr<TcpStoreServer> server;
  int port = where.port;
  if (rank == 0) {
    server = hostEnvStore(host, where, secret);
    port = server->port();
  }
  if (where.agentStore) port = meetThroughAgentStore(host, masterPort, rank, port);
  auto store = std::make_shared<TcpStore>(host, port, Deadline::after(), secret);
  auto b = std::make_unique<Bootstrap>(
      store, rank, nranks, "", secret.empty() ? std::nullopt : std::optional(secret), server);
  CTRAN_INFO("bootstrap: rank ", rank, "/", nranks, " joined through ", host, ":", port, " (",
             where.source, ")");
  return b;
}

void Bootstrap::checkPeer(int peer, const char* what) const {
  CTRAN_CHECK(peer >= 0 && peer < nranks_, InvalidArgument, "bootstrap ", what, ": peer ", peer,
              " is out of range for nranks ", nranks_);
}

std::vector<Bytes> Bootstrap::allGather(const Bytes& mine) {
  uint64_t seq = allGatherSeq_++;
  store_->set(key(strCat("ag/", seq, "/", rank_)), mine);
  std::vector<Bytes> all(nranks_);
  Deadline deadline = Deadline::after();
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) {
      all[r] = mine;
      continue;
    }
    all[r] = awaitPeer(key(strCat("ag/", seq, "/", r)), deadline, r,
                       strCat("bootstrap allgather: rank ", r, " did not arrive"));
  }
  std::vector<std::string> keys;
  for (int r = 0; r < nranks_; ++r) keys.push_back(key(strCat("ag/", seq, "/", r)));
  waitForReaders(strCat("ag/", seq), keys);
  return all;
}

void Bootstrap::barrier() {
  uint64_t seq = barrierSeq_++;
  int64_t arrived = store_->add(key(strCat("bar/", seq)), 1);
  if (arrived == nranks_) store_->set(key(strCat("bar/", seq, "/done")), Bytes{1});
  awaitPeer(key(strCat("bar/", seq, "/done")), Deadline::after(), -1,
            "bootstrap barrier: not every rank arrived");
  waitForReaders(strCat("bar/", seq),
                 {key(strCat("bar/", seq)), key(strCat("bar/", seq, "/done"))});
}

// The process hosting the store server (the unique id's creator, or rank 0 bootstrapped from
// the environment) may exit as soon as its last bootstrap call returns. So that its exit does
// not cut peers off in the middle of reading that call's result, every rank reports when it
// has read it and the host waits for all reports. The call has succeeded by then, so neither
// failing to report (the host may have gone as soon as the last report landed, before it was
// acknowledged) nor a rank that never reports (it died) is an error of this call: the first
// only ends the report, the second delays the host until the deadline.
//
// The last rank to report knows every rank has read the call's `keys`: it erases them and the
// report counter, so a long-lived store does not grow with every call (communicators split and
// destroyed for hours). The call's "all read" flag must outlive the call (several ranks of one
// process may each be waiting for it, and none knows when the others have seen it), but not
// the next one: every rank that reports on the next call has left this one, so that call's last
// reader erases it. One flag per bootstrap stays, the last call's.
void Bootstrap::waitForReaders(const std::string& op, const std::vector<std::string>& keys) {
  const std::string counter = key(op + "/read"), allRead = key(op + "/allread");
  if (nranks_ == 1) {
    for (const auto& k : keys) store_->erase(k);
    return;
  }
  const std::string previousAllRead = std::exchange(lastAllRead_, allRead);
  auto lastReader = [&] {
    for (const auto& k : keys) store_->erase(k);
    store_->erase(counter);
    if (!previousAllRead.empty()) store_->erase(previousAllRead);
    store_->set(allRead, Bytes{1});
  };
  if (!hostsStore_) {
    try {
      if (store_->add(counter, 1) == nranks_) lastReader();
    } catch (const RemoteError& e) {
      CTRAN_INFO("bootstrap ", op, ": could not confirm reading the result: ", e.what());
    }
    return;
  }
  if (store_->add(counter, 1) == nranks_) {
    lastReader();
    return;
  }
  try {
    awaitRecord(allRead, Deadline::after(), -1);
  } catch (const TimeoutError& e) {
    CTRAN_WARN("bootstrap ", op, ": not every rank confirmed reading the result: ", e.what());
  } catch (const RemoteError& e) {
    CTRAN_INFO("bootstrap ", op, ": a rank left before confirming it read the result: ", e.what());
  }
}

void Bootstrap::close(const std::function<void()>& check) {
  const std::string counter = key("close/read");
  auto eraseAll = [&] {
    for (int r = 0; r < nranks_; ++r) {
      store_->erase(key(strCat("join/", r)));
      store_->erase(key(strCat("nranks/", r)));
    }
    store_->erase(key("job_secret"));
    if (!lastAllRead_.empty()) store_->erase(lastAllRead_);
    store_->erase(counter);
  };
  // Housekeeping only: a store already gone (its host, say torch's rank 0, left first) or a rank
  // that never comes is no error of the group's end.
  try {
    if (store_->add(counter, 1) == nranks_) {
      eraseAll();
      return;
    }
    if (!hostsStore_) return;
    // No flag that would outlive the call: the last rank's erasing the counter says all came.
    waitUntil([&] { return !store_->check(counter); }, Deadline::after(),
              [] { return std::string("every rank closing the bootstrap"); }, check);
  } catch (const Error& e) {
    CTRAN_INFO("bootstrap close: the store keeps this group's records: ", e.what());
  }
}

void Bootstrap::watchPeers(std::function<void(int peer)> check) { watch_ = std::move(check); }

template <typename Call>
auto Bootstrap::onStore(int peer, Call&& call) {
  try {
    return call();
  } catch (const TimeoutError&) {
    throw;
  } catch (const RemoteError&) {
    // The store is gone, perhaps because its host left on the very failure that holds this
    // wait up: when the group knows that failure, it is the error to raise.
    if (watch_) watch_(peer);
    throw;
  }
}

Bytes Bootstrap::awaitRecord(const std::string& k, const Deadline& deadline, int peer) {
  if (!watch_) return store_->get(k, deadline);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline.at() - std::chrono::steady_clock::now());
    // The last stretch waits on `deadline` itself, so a timeout names the whole wait.
    const bool last = left.count() <= kWatchPeriodMs;
    try {
      return onStore(
          peer, [&] { return store_->get(k, last ? deadline : Deadline::after(kWatchPeriodMs)); });
    } catch (const TimeoutError&) {
      if (last) throw;
    }
    try {
      watch_(peer);
    } catch (const Error&) {
      bool written = false;  // just before the peer went
      try {
        written = store_->check(k);
      } catch (const Error&) {
        // The store is gone too: the watch's error says why.
      }
      if (written) return store_->get(k, deadline);
      throw;
    }
  }
}

std::string Bootstrap::absentRanks(int besides) const {
  constexpr size_t kListedAtMost = 8;
  std::vector<int> absent;
  try {
    for (int r = 0; r < nranks_; ++r) {
      if (r != besides && !store_->check(key(strCat("join/", r)))) absent.push_back(r);
    }
  } catch (const Error&) {
    return "";  // the store is gone: the error at hand says why
  }
  if (absent.empty()) return "";
  std::string list;
  for (size_t i = 0; i < std::min(absent.size(), kListedAtMost); ++i) {
    list += strCat(i == 0 ? "" : ", ", absent[i]);
  }
  if (absent.size() > kListedAtMost)
    list += strCat(" and ", absent.size() - kListedAtMost, " more");
  return absent.size() == 1 ? strCat(" (rank ", list, " has not joined the group)")
                            : strCat(" (ranks ", list, " have not joined the group)");
}

Bytes Bootstrap::awaitPeer(const std::string& k, const Deadline& deadline, int peer,
                           const std::string& context) {
  try {
    return awaitRecord(k, deadline, peer);
  } catch (const TimeoutError& e) {
    TimeoutError failure(strCat(context, absentRanks(peer), ": ", e.what()), e.peer());
    if (hostedServer_) hostedServer_->leaveFarewell(failure);
    throw failure;
  } catch (const RemoteError& e) {
    if (hostedServer_) hostedServer_->leaveFarewell(e);
    throw;
  }
}

void Bootstrap::send(int peer, const Bytes& message) {
  checkPeer(peer, "send");
  uint64_t seq = sendSeq_[peer]++;
  store_->set(key(strCat("p2p/", rank_, "/", peer, "/", seq)), message);
}

Bytes Bootstrap::recv(int peer) {
  checkPeer(peer, "recv");
  uint64_t seq = recvSeq_[peer]++;
  std::string k = key(strCat("p2p/", peer, "/", rank_, "/", seq));
  Bytes out =
      awaitPeer(k, Deadline::after(), peer, strCat("bootstrap recv: no message from rank ", peer));
  store_->erase(k);
  return out;
}

// Each listed rank publishes its value and reads every other listed rank's; the first to see
// two differ publishes why, so that ranks still waiting for a record that will not come (a rank
// another one excluded) fail with the same message instead of timing out. When all agree, the
// last reader erases the records; a disagreement leaves them (a failed call, not every call).
void Bootstrap::agreeAmong(const std::vector<int>& ranks, const std::string& tag,
                           const std::string& value, const std::string& what) {
  const std::string base = key(strCat("agree/", tag, "/"));
  const std::string disagreed = base + "disagreed";
  store_->set(base + std::to_string(rank_), toBytes(value));
  const Deadline deadline = Deadline::after();
  for (int r : ranks) {
    if (r == rank_) continue;
    const std::string record = base + std::to_string(r);
    waitUntil(
        [&] {
          return onStore(r, [&] { return store_->check(record) || store_->check(disagreed); });
        },
        deadline, [&] { return strCat("rank ", r, " to reach ", tag, " (", what, ")"); },
        watch_ ? std::function<void()>([&] { watch_(r); }) : nullptr);
    if (!store_->check(record)) throw InvalidArgument(toString(store_->get(disagreed, deadline)));
    const std::string theirs = toString(store_->get(record, deadline));
    if (theirs == value) continue;
    const std::string message =
        strCat(what, " differ: rank ", r, " passed [", theirs, "] but rank ", rank_, " passed [",
               value, "]; every listed rank must pass the same");
    store_->set(disagreed, toBytes(message));
    throw InvalidArgument(message);
  }
  if (store_->add(base + "read", 1) == static_cast<int64_t>(ranks.size())) {
    for (int r : ranks) store_->erase(base + std::to_string(r));
    store_->erase(base + "read");
  }
}

std::unique_ptr<Bootstrap> Bootstrap::subgroup(const std::vector<int>& ranks,
                                               const std::string& tag) {
  int newRank = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    checkPeer(ranks[i], "subgroup");
    for (size_t j = 0; j < i; ++j) {
      CTRAN_CHECK(ranks[j] != ranks[i], InvalidArgument, "subgroup: rank ", ranks[i],
                  " is listed twice");
    }
    if (ranks[i] == rank_) newRank = static_cast<int>(i);
  }
  CTRAN_CHECK(newRank >= 0, InvalidArgument, "subgroup: this rank (", rank_,
              ") is not among the listed ranks");
  auto b = std::make_unique<Bootstrap>(store_, newRank, static_cast<int>(ranks.size()),
                                       prefix_ + "sub/" + tag, secret_, hostedServer_);
  b->hostsStore_ = hostsStore_;
  // Until the sub-group's own peer group watches it, this group's watch does (its ranks
  // renamed): a member dying while the sub-group connects ends the wait there too.
  if (watch_) {
    b->watch_ = [watch = watch_, ranks](int peer) { watch(peer < 0 ? -1 : ranks[peer]); };
  }
  b->localHost_ = localHost_;
  log::setRank(rank_);  // logs keep the global rank
  return b;
}

}  // namespace ctran
