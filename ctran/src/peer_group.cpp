// Implementation of peer_group.hpp: transport selection and connection.
#include "ctran/peer_group.hpp"

#include <algorithm>
#include <filesystem>
#include <random>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "ctran/window.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/tcp/tcp_transport.hpp"
#include "transport/ucx/ucx_transport.hpp"

namespace ctran {
namespace {

// What a rank says of the ucx transport when its group chooses one: it needs none, it can load
// it (and its host has an RDMA device, or not), or why it cannot.
constexpr const char* kUcxNotNeeded = "-";
constexpr const char* kUcxLoads = "ok";
constexpr const char* kUcxLoadsWithoutRdma = "ok, no RDMA device";

// Whether this host has an RDMA device (InfiniBand, RoCE, EFA: each appears under
// /sys/class/infiniband). Without one UCX moves bytes over TCP, which measured 4-10x slower
// than the tcp transport (docs/ctran.rst), so auto does not choose it.
bool hasRdmaDevice() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
  return !ec && it != std::filesystem::directory_iterator();
}

// The transport between ranks that do not share memory, from every rank's `ucxStates` (as
// above, by rank); the same on every rank. Throws InvalidUsage when ucx is required and a rank
// cannot load it. `why` says how the choice was made, for the log.
TransportKind chooseNetTransport(const std::string& forced, const std::string& net,
                                 const std::vector<std::string>& ucxStates, std::string* why) {
  if (forced == "tcp") {
    *why = "RCCLX_TRANSPORT=tcp";
    return TransportKind::kTcp;
  }
  const bool required = forced == "ucx" || net == "ucx";
  if (!required && net == "tcp") {
    *why = "RCCLX_NET_TRANSPORT=tcp";
    return TransportKind::kTcp;
  }
  const char* knob = forced == "ucx" ? "RCCLX_TRANSPORT=ucx" : "RCCLX_NET_TRANSPORT=ucx";
  for (size_t r = 0; r < ucxStates.size(); ++r) {
    const std::string& s = ucxStates[r];
    if (s == kUcxNotNeeded || s == kUcxLoads) continue;
    if (s == kUcxLoadsWithoutRdma) {
      if (required) continue;
      *why = strCat("RCCLX_NET_TRANSPORT=auto, and rank ", r, "'s host has no RDMA device (",
                    "UCX would run over TCP; RCCLX_NET_TRANSPORT=ucx forces it)");
      return TransportKind::kTcp;
    }
    CTRAN_CHECK(!required, InvalidUsage, knob, ": rank ", r, " cannot use the ucx transport: ", s);
    *why = strCat("RCCLX_NET_TRANSPORT=auto, and rank ", r, " cannot use ucx (", s, ")");
    return TransportKind::kTcp;
  }
  *why = required ? std::string(knob)
                  : strCat(
                        "RCCLX_NET_TRANSPORT=auto, and every rank loads libucp and has an "
                        "RDMA device");
  return TransportKind::kUcx;
}

// "shm+ucx", "tcp": the transports this rank uses, for the log.
std::string transportSummary(const std::vector<TransportKind>& kinds) {
  std::string out;
  for (TransportKind k : {TransportKind::kShm, TransportKind::kTcp, TransportKind::kUcx}) {
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end()) continue;
    out += (out.empty() ? "" : "+") + std::string(transportName(k));
  }
  return out.empty() ? "self" : out;
}

}  // namespace

const char* transportName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kSelf: return "self";
    case TransportKind::kShm: return "shm";
    case TransportKind::kTcp: return "tcp";
    case TransportKind::kCudaIpc: return "cuda_ipc";
    case TransportKind::kUcx: return "ucx";
  }
  return "?";
}

std::pair<std::string, std::string> ucxLibraryStatus() {
  std::string why = ucxUnavailableReason();
  return {why.empty() ? ucxLibraryDescription() : std::string(), why};
}

PeerGroup::PeerGroup(std::unique_ptr<Bootstrap> bootstrap) : bootstrap_(std::move(bootstrap)) {
  CTRAN_CHECK(bootstrap_ != nullptr, InvalidArgument, "PeerGroup: bootstrap is null");
  topology_ = discoverTopology(*bootstrap_);
  const std::string forced = knob::RCCLX_TRANSPORT();
  const std::string net = knob::RCCLX_NET_TRANSPORT();
  // Peers that share memory with this rank use shm unless a transport is forced for all.
  const bool forcedAll = forced == "tcp" || forced == "ucx";
  kinds_.assign(topology_.nranks, TransportKind::kSelf);
  std::vector<int> shmPeers, netPeers;
  for (int p = 0; p < topology_.nranks; ++p) {
    if (p == topology_.rank) continue;
    if (topology_.sameHost(p, topology_.rank) && !forcedAll) {
      kinds_[p] = TransportKind::kShm;
      shmPeers.push_back(p);
    } else {
      netPeers.push_back(p);
    }
  }
  // Whether this rank can load libucp, where it would use it, rides on the tag's exchange: every
  // rank then makes the same choice (one rank without UCX makes auto choose tcp for all).
  const bool mayUseUcx = !netPeers.empty() && forced != "tcp" && (forcedAll || net != "tcp");
  std::string ucxState = kUcxNotNeeded;
  if (mayUseUcx) {
    ucxState = ucxUnavailableReason();
    if (ucxState.empty()) ucxState = hasRdmaDevice() ? kUcxLoads : kUcxLoadsWithoutRdma;
  }
  // Every rank agrees on the tag: rank 0's random draw.
  std::random_device rd;
  std::string tag = strCat(std::hex, (static_cast<uint64_t>(rd()) << 32) | rd());
  std::string mine = tag + "\n" + ucxState;
  auto blobs = bootstrap_->allGather(Bytes(mine.begin(), mine.end()));
  std::vector<std::string> ucxStates;
  for (const Bytes& b : blobs) {
    std::string s(b.begin(), b.end());
    size_t cut = s.find('\n');
    CTRAN_CHECK(cut != std::string::npos, RemoteError, "peer group: a malformed tag from a peer");
    if (ucxStates.empty()) jobTag_ = s.substr(0, cut);
    ucxStates.push_back(s.substr(cut + 1));
  }
  std::string why;
  const TransportKind netKind = chooseNetTransport(forced, net, ucxStates, &why);
  for (int p : netPeers) kinds_[p] = netKind;
  failure_ = std::make_shared<GroupFailure>(*bootstrap_, shmPeers, jobTag_);
  if (topology_.nHosts > 1) {
    std::vector<std::string> hostOfRank;
    for (int r = 0; r < topology_.nranks; ++r)
      hostOfRank.push_back(topology_.hostNames[topology_.hostOf[r]]);
    failure_->setHostNames(std::move(hostOfRank));
  }
  if (!shmPeers.empty()) shm_ = std::make_unique<ShmTransport>(topology_);
  if (!netPeers.empty() && netKind == TransportKind::kTcp) {
    tcp_ = std::make_unique<TcpTransport>(*bootstrap_, netPeers, failure_.get());
    tcp_->setStallCheck([this](int peer) { checkPeer(peer); });
  } else if (!netPeers.empty()) {
    ucx_ = createUcxTransport(*bootstrap_, netPeers, failure_.get());
  }
  CTRAN_INFO(
      "peer group: rank ", rank(), "/", nranks(), ", ", topology_.nHosts, " host(s), ",
      topology_.localSize(), " rank(s) on this host, transport ", transportSummary(kinds_),
      netPeers.empty()
          ? std::string()
          : strCat("; ", netPeers.size(), " peer(s) on ", transportName(netKind), " (", why, ")",
                   netKind == TransportKind::kUcx ? strCat(", ", ucxLibraryDescription())
                                                  : std::string()));
  // From here on the transports see peers die: a bootstrap wait (a split, a window, a grow)
  // for a dead peer's record ends with its death, reported to every rank, not at the timeout.
  bootstrap_->watchPeers([this](int peer) {
    if (peer >= 0) {
      checkPeer(peer);
      return;
    }
    for (int p = 0; p < nranks(); ++p) {
      if (kinds_[p] != TransportKind::kSelf) checkPeer(p);
    }
  });
}

PeerGroup::~PeerGroup() {
  try {
    if (!destroyed_) destroy();
  } catch (const std::exception& e) {
    CTRAN_WARN("peer group destroy: ", e.what());
  }
}

void PeerGroup::checkUsable(const char* what) const {
  CTRAN_CHECK(!destroyed_, InvalidUsage, what, ": the peer group was already destroyed");
}

Bootstrap& PeerGroup::bootstrap() {
  checkUsable("bootstrap");
  return *bootstrap_;
}

void PeerGroup::validatePeer(int peer, const char* what) const {
  CTRAN_CHECK(peer >= 0 && peer < topology_.nranks, InvalidArgument, what, ": peer ", peer,
              " is out of range for a group of ", topology_.nranks, " ranks");
}

TransportKind PeerGroup::transportTo(int peer) const {
  validatePeer(peer, "transportTo");
  return kinds_[peer];
}

Transport& PeerGroup::transport(TransportKind kind) {
  checkUsable("transport");
  Transport* t = kind == TransportKind::kShm   ? shm_.get()
                 : kind == TransportKind::kTcp ? tcp_.get()
                 : kind == TransportKind::kUcx ? ucx_.get()
                                               : nullptr;
  CTRAN_CHECK(t != nullptr, InvalidUsage, "no ", transportName(kind), " transport in this group");
  return *t;
}

bool PeerGroup::movesDeviceMemory(int peer) const {
  validatePeer(peer, "movesDeviceMemory");
  Messages* m = ucx_ ? ucx_->messages() : nullptr;
  return m != nullptr && m->movesDeviceMemory() &&
         (peer == topology_.rank || kinds_[peer] == TransportKind::kUcx);
}

void PeerGroup::exchangeMessages(const std::vector<Message>& batch, const char* what,
                                 int64_t timeoutMs) {
  checkUsable(what);
  Messages* m = ucx_ ? ucx_->messages() : nullptr;
  CTRAN_CHECK(m != nullptr, InvalidUsage, what,
              ": two-sided messages need the ucx transport, which reaches no rank of this group");
  for (const Message& msg : batch) {
    validatePeer(msg.peer, what);
    CTRAN_CHECK(msg.peer == topology_.rank || kinds_[msg.peer] == TransportKind::kUcx,
                InvalidArgument, what, ": rank ", msg.peer, " is reached over ",
                transportName(kinds_[msg.peer]), ", not ucx");
    CTRAN_CHECK(msg.data != nullptr || msg.bytes == 0, InvalidArgument, what, ": the ",
                msg.send ? "send to" : "receive from", " rank ", msg.peer, " has ", msg.bytes,
                " bytes at a null pointer");
  }
  try {
    m->exchange(
        batch, Deadline::after(timeoutMs),
        // A message still owed by a peer that left in an orderly way never comes.
        [this](int peer) { checkPeer(peer, [] { return false; }); }, what);
  } catch (const TimeoutError& e) {
    reportTimeout(e);
    throw;
  }
}

void PeerGroup::checkPeer(int peer, const std::function<bool()>& delivered) {
  validatePeer(peer, "checkPeer");
  checkUsable("checkPeer");
  raiseIfFailed(peer);
  if (kinds_[peer] == TransportKind::kSelf) return;
  try {
    Transport& t = transport(kinds_[peer]);
    t.checkPeer(peer);
    // A peer that destroyed its group is no failure unless this rank waits on it for what it
    // never sent: its messages are applied in order, and the departure after the last.
    if (delivered && t.peerLeft(peer) && !delivered()) {
      throw RemoteError(strCat("peer rank ", peer, " destroyed its communicator while rank ",
                               topology_.rank, " waits on it (their calls do not match)"));
    }
  } catch (const RemoteError& e) {
    // The transport applies a peer's messages in order and marks it gone after the last: what
    // it sent before leaving is visible by now.
    if (delivered && delivered()) return;
    // A peer that raised leaves the group and closes its connections: its own report (which
    // names the cause) may arrive just before the close or still be on its way.
    failure_->awaitReportOf(peer, kPeerReportMs);
    raiseIfFailed();
    reportFailure(peer, e.what());
    throw;
  }
}

void PeerGroup::closeBootstrap() {
  checkUsable("closeBootstrap");
  // A peer that closed has added to the count before it left (its close precedes its
  // destroy): one gone while the count is short means a rank that will not come.
  bootstrap_->close([this] {
    raiseIfFailed();
    for (int p = 0; p < nranks(); ++p) {
      if (kinds_[p] != TransportKind::kSelf) transport(kinds_[p]).checkPeer(p);
    }
  });
}

void PeerGroup::reportFailure(int culprit, const std::string& cause) {
  publish({culprit, topology_.rank, false, cause});
}

void PeerGroup::reportTimeoutOn(int peer, const std::string& cause) {
  publish({peer, topology_.rank, true, cause});
}

void PeerGroup::publish(const FailureReport& r) {
  // Shared-memory peers read the report from this rank's slot; the others are told.
  if (!failure_->report(r) || destroyed_) return;
  if (tcp_) tcp_->broadcastFailure(r);
  if (ucx_) ucx_->broadcastFailure(r);
}

void PeerGroup::reportTimeout(const TimeoutError& timeout) {
  const int peer = timeout.peer();
  reportTimeoutOn(peer, timeout.what());
  if (peer < 0 || peer == topology_.rank) return;
  // Waits for the peer's own report (it may be waiting on a further rank), hop by hop.
  auto resolved = failure_->resolve();
  if (resolved && resolved->reporter != topology_.rank) raiseIfFailed();
  if (topology_.nHosts > 1 && !topology_.sameHost(peer, topology_.rank)) {
    throw TimeoutError(strCat(timeout.what(), " (rank ", peer, ": host ",
                              topology_.hostNames[topology_.hostOf[peer]], ")"),
                       peer);
  }
}

void PeerGroup::checkFailed() { raiseIfFailed(); }

void PeerGroup::checkFailedAtCallStart() {
  // Between calls this rank waits on no rank, so it cannot say whom the chain of timeouts
  // ends at; raising now would name it, alive, as the culprit. A report of anything else (a
  // death, a timeout on another rank) raises as before.
  auto r = failure_->current();
  if (r && r->timedOut && r->culprit == topology_.rank) return;
  raiseIfFailed();
}

void PeerGroup::raiseIfFailed(int waitingOn) {
  const int me = topology_.rank;
  const bool waiting = waitingOn >= 0 && waitingOn != me;
  // A rank gave up waiting on this one, which is itself waiting on `waitingOn`: it says so, so
  // that the report names the rank at the end of the chain, not this one. It answers for itself
  // rather than wait for its own answer, also when the blame arrives while it follows the chain.
  auto answer = [&](const std::string& about) {
    reportTimeoutOn(waitingOn, strCat("was waiting on rank ", waitingOn, " when ", about));
  };
  // Raising, this rank leaves the collective, so it can no longer answer for itself if a rank
  // waiting on it blames it: it leaves a report that points on (publish() makes it only if this
  // rank has not reported yet). A death or an abort is passed on as it is; after a timeout it
  // points to the rank it waits on, if any, else where the timeouts led. It leaves it before it
  // waits for any rank's answer (resolve): a rank that gave up on this one waits only so long.
  auto leave = [&](const FailureReport& r) {
    if (r.reporter == me) return;
    if (!r.timedOut) {
      const bool died = r.culprit >= 0;  // "rank c failed: <cause> (detected ...)"
      publish({r.culprit, me, false, died ? r.cause : strCat("left when ", r.message())});
    } else if (waiting) {
      answer(r.message());
    } else if (r.culprit != me) {
      publish({r.culprit, me, true, strCat("left when ", r.message())});
    }
  };
  if (waiting && failure_->blames(me)) answer(failure_->current()->message());
  if (auto known = failure_->current()) leave(*known);
  auto r = failure_->resolve(/*waitForSelf=*/!waiting);
  if (r && waiting && r->timedOut && r->culprit == me) {
    answer(r->message());
    r = failure_->resolve();
  }
  if (!r) return;
  leave(*r);
  throw RemoteError(r->message());
}

std::optional<FailureReport> PeerGroup::failure() { return failure_->current(); }

std::shared_ptr<Window> PeerGroup::createWindow(size_t bytes, int numSignals) {
  checkUsable("createWindow");
  return std::shared_ptr<Window>(new Window(*this, bytes, numSignals));
}

void PeerGroup::destroy() {
  checkUsable("destroy");
  destroyed_ = true;
  ucx_.reset();
  tcp_.reset();
  shm_.reset();
  bootstrap_.reset();
}

}  // namespace ctran
