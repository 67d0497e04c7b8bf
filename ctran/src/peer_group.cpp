// Implementation of peer_group.hpp: transport selection and connection.
#include "ctran/peer_group.hpp"

#include <random>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "ctran/window.hpp"
#include "transport/shm/shm_transport.hpp"
#include "transport/tcp/tcp_transport.hpp"

namespace ctran {
namespace {

// How long a rank waits for a peer's own report before blaming the peer: long enough for a
// report to cross a tcp connection, short next to any timeout.
constexpr int64_t kPeerReportMs = 250;

}  // namespace

const char* transportName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kSelf: return "self";
    case TransportKind::kShm: return "shm";
    case TransportKind::kTcp: return "tcp";
    case TransportKind::kCudaIpc: return "cuda_ipc";
  }
  return "?";
}

PeerGroup::PeerGroup(std::unique_ptr<Bootstrap> bootstrap) : bootstrap_(std::move(bootstrap)) {
  CTRAN_CHECK(bootstrap_ != nullptr, InvalidArgument, "PeerGroup: bootstrap is null");
  topology_ = discoverTopology(*bootstrap_);
  std::string forced = knob::RCCLX_TRANSPORT();
  kinds_.resize(topology_.nranks);
  std::vector<int> tcpPeers, shmPeers;
  for (int p = 0; p < topology_.nranks; ++p) {
    if (p == topology_.rank) {
      kinds_[p] = TransportKind::kSelf;
    } else if (topology_.sameHost(p, topology_.rank) && forced != "tcp") {
      kinds_[p] = TransportKind::kShm;
      shmPeers.push_back(p);
    } else {
      kinds_[p] = TransportKind::kTcp;
      tcpPeers.push_back(p);
    }
  }
  // Every rank agrees on the tag: rank 0's random draw.
  std::random_device rd;
  std::string tag = strCat(std::hex, (static_cast<uint64_t>(rd()) << 32) | rd());
  auto tags = bootstrap_->allGather(Bytes(tag.begin(), tag.end()));
  jobTag_.assign(tags[0].begin(), tags[0].end());
  const bool anyShm = !shmPeers.empty();
  failure_ = std::make_shared<GroupFailure>(*bootstrap_, shmPeers, jobTag_);
  if (topology_.nHosts > 1) {
    std::vector<std::string> hostOfRank;
    for (int r = 0; r < topology_.nranks; ++r)
      hostOfRank.push_back(topology_.hostNames[topology_.hostOf[r]]);
    failure_->setHostNames(std::move(hostOfRank));
  }
  if (anyShm) shm_ = std::make_unique<ShmTransport>(topology_);
  if (!tcpPeers.empty()) {
    tcp_ = std::make_unique<TcpTransport>(*bootstrap_, tcpPeers, failure_.get());
  }
  CTRAN_INFO("peer group: rank ", rank(), "/", nranks(), ", ", topology_.nHosts, " host(s), ",
             topology_.localSize(), " rank(s) on this host, transport ",
             tcpPeers.empty() ? "shm" : (anyShm ? "shm+tcp" : "tcp"));
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
                                               : nullptr;
  CTRAN_CHECK(t != nullptr, InvalidUsage, "no ", transportName(kind), " transport in this group");
  return *t;
}

void PeerGroup::checkPeer(int peer) {
  validatePeer(peer, "checkPeer");
  checkUsable("checkPeer");
  const int me = topology_.rank;
  if (auto r = failure_->current(); r && r->timedOut && r->culprit == me && peer != me) {
    // A rank gave up waiting on this one, which is itself waiting on `peer`: say so, so the
    // report names the rank at the end of the chain, not this one.
    reportTimeoutOn(peer, strCat("was waiting on rank ", peer, " when ", r->message()));
  }
  failure_->check();
  if (kinds_[peer] == TransportKind::kSelf) return;
  try {
    transport(kinds_[peer]).checkPeer(peer);
  } catch (const RemoteError& e) {
    // A peer that raised leaves the group and closes its connections: its own report (which
    // names the cause) may arrive just before the close or still be on its way.
    failure_->awaitReportOf(peer, kPeerReportMs);
    failure_->check();
    reportFailure(peer, e.what());
    throw;
  }
}

void PeerGroup::reportFailure(int culprit, const std::string& cause) {
  FailureReport r{culprit, topology_.rank, false, cause};
  if (failure_->report(r) && tcp_ && !destroyed_) tcp_->broadcastFailure(r);
}

void PeerGroup::reportTimeoutOn(int peer, const std::string& cause) {
  FailureReport r{peer, topology_.rank, true, cause};
  if (failure_->report(r) && tcp_ && !destroyed_) tcp_->broadcastFailure(r);
}

void PeerGroup::reportTimeout(const TimeoutError& timeout) {
  const int peer = timeout.peer();
  reportTimeoutOn(peer, timeout.what());
  if (peer < 0 || peer == topology_.rank) return;
  failure_->awaitReportOf(peer, kPeerReportMs);
  auto resolved = failure_->current();
  if (resolved && resolved->reporter != topology_.rank) throw RemoteError(resolved->message());
  if (topology_.nHosts > 1 && !topology_.sameHost(peer, topology_.rank)) {
    throw TimeoutError(strCat(timeout.what(), " (rank ", peer, ": host ",
                              topology_.hostNames[topology_.hostOf[peer]], ")"),
                       peer);
  }
}

void PeerGroup::checkFailed() { failure_->check(); }

std::optional<FailureReport> PeerGroup::failure() { return failure_->current(); }

std::shared_ptr<Window> PeerGroup::createWindow(size_t bytes, int numSignals) {
  checkUsable("createWindow");
  return std::shared_ptr<Window>(new Window(*this, bytes, numSignals));
}

void PeerGroup::destroy() {
  checkUsable("destroy");
  destroyed_ = true;
  tcp_.reset();
  shm_.reset();
  bootstrap_.reset();
}

}  // namespace ctran
