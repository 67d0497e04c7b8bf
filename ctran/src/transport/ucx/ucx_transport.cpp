// Implementation of ucx_transport.hpp: endpoints, registered windows, put / signal, failures.
#include "ucx_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"
#include "ucp_library.hpp"
#include "ucx_messages.hpp"
#include "ucx_wire.hpp"
#include "ucx_worker.hpp"

namespace ctran {
namespace ucx {
namespace {

// How long teardown and failure reports wait on a peer: short next to any timeout, long enough
// for a flush to cross a loaded link.
constexpr int64_t kCloseMs = 2000;
constexpr int64_t kReportMs = 1000;
// A failure report's cause is cut to this many bytes (it travels eagerly, in one message).
constexpr uint32_t kMaxCause = 2000;

// Active-message ids of the transport (any two ids that no other user of this worker takes).
constexpr unsigned kSignalAm = 0x7c01;
constexpr unsigned kFailureAm = 0x7c02;
constexpr unsigned kLeaveAm = 0x7c03;

// A put of at most this many bytes waits in its window and travels with the next signal to that
// peer, in the signal's active message: the signal then needs no flush (a round trip) first. A
// put need only be visible by the next signal, and one message is applied in order.
constexpr size_t kCarriedPutBytes = 8192;

// A signal travelling as an active message: the peer writes the message's data, a put carried
// along (none when empty), at `offset` of `windowId`'s memory, then adds `delta` to `slot`.
struct SignalAm {
  uint64_t windowId;
  uint64_t delta;
  uint64_t offset;
  int32_t slot;
  int32_t pad;
};

// A rank's orderly departure (its group destroyed after its last send): the peer then drops
// what it still sends there and no longer takes that endpoint's closing for a failure.
struct LeaveAm {
  int32_t rank;
  int32_t pad;
};

// A failure report travelling as an active message; the cause follows as its data.
struct FailureAm {
  int32_t culprit;
  int32_t reporter;
  uint32_t timedOut;
  uint32_t causeBytes;
};

// What a rank says of handing GPU memory to UCX, appended to its worker address: every rank
// must agree, since a rank that stages a GPU call's buffers through host memory meets its peers
// with other messages than one that hands them to UCX.
enum GpuMemoryState : uint8_t {
  kGpuMemoryOff = 0,     // RCCLX_UCX_GPU_MEMORY=0
  kGpuMemoryNoCuda = 1,  // its UCX has no CUDA memory support (built without, or no driver)
  kGpuMemoryOn = 2,
};

GpuMemoryState gpuMemoryState(const UcpApi& api, ucp_context_h context) {
  if (!knob::RCCLX_UCX_GPU_MEMORY()) return kGpuMemoryOff;
  ucp_context_attr_t attr = {};
  attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
  if (api.ucp_context_query(context, &attr) != UCS_OK) return kGpuMemoryNoCuda;
  return (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0 ? kGpuMemoryOn : kGpuMemoryNoCuda;
}

// Whether every rank said kGpuMemoryOn; else `why` names the first rank that did not.
bool agreeOnGpuMemory(const std::vector<uint8_t>& states, std::string* why) {
  for (size_t r = 0; r < states.size(); ++r) {
    if (states[r] == kGpuMemoryOn) continue;
    *why = strCat("rank ", r,
                  states[r] == kGpuMemoryOff ? " set RCCLX_UCX_GPU_MEMORY=0"
                                             : "'s UCX does not drive CUDA memory");
    return false;
  }
  return true;
}

// One peer reached over ucx.
struct Peer {
  int rank = -1;
  ucp_ep_h ep = nullptr;
  std::atomic<bool> failed{false};
  std::atomic<int> status{UCS_OK};
  std::atomic<bool> unflushed{false};  // a put was issued since the last flush
  std::atomic<bool> left{false};       // it destroyed its group in an orderly way (LeaveAm)
};

// UCX calls this inside ucp_worker_progress (under the worker lock) when the endpoint to a
// peer fails: the peer exited, crashed or became unreachable.
void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* peer = static_cast<Peer*>(arg);
  peer->status.store(status);
  peer->failed.store(true);
}

}  // namespace

class UcxPeerWindow;

// The transport. Everything UCX hands out (endpoints, memory handles, remote keys) is released
// before the worker, in the destructor; remote keys of PeerWindows that outlive the transport
// (their Window was not destroyed before its group) are released here too.
class UcxTransport : public Transport {
 public:
  UcxTransport(Bootstrap& bootstrap, const std::vector<int>& peers, GroupFailure* failure);
  ~UcxTransport() override;

  TransportKind kind() const override { return TransportKind::kUcx; }
  Bytes exportWindow(const LocalWindow& window) override;
  std::unique_ptr<PeerWindow> importWindow(int peer, const LocalWindow& mine,
                                           const Bytes& handle) override;
  void releaseWindow(uint64_t windowId) override;
  void checkPeer(int peer) override;
  bool peerLeft(int peer) const override;
  void broadcastFailure(const FailureReport& report) override;
  Messages* messages() override { return messages_.get(); }

  /// ucp_put_nbx of `bytes` to `remote` in `peer`'s memory, waited for until local completion.
  void putTo(int peer, uint64_t remote, ucp_rkey_h key, const void* src, size_t bytes);
  /// Adds `delta` to `slot` of `peer`'s window `windowId` after every earlier put to `peer`
  /// has landed: a flush of the endpoint when puts were issued since the last one (remote
  /// completion, whatever the network's ordering), then an active message that the peer's
  /// progress applies with signalAdd. Waits for local completion.
  /// `carried` (`carriedBytes`, at most kCarriedPutBytes) is a put to `offset` of the window
  /// that travels in the signal's message.
  void signalPeer(int peer, uint64_t windowId, int slot, uint64_t delta, uint64_t offset = 0,
                  const void* carried = nullptr, size_t carriedBytes = 0);
  UcxWorker& worker() { return *worker_; }
  /// Removes `w` from the windows whose keys teardown releases; false once teardown did.
  bool forget(UcxPeerWindow* w);

 private:
  struct Region {
    LocalWindow window;
    ucp_mem_h dataMem = nullptr;
  };

  ucp_mem_h mapMemory(void* address, size_t bytes);
  Bytes packKey(ucp_mem_h mem);
  ucp_rkey_h unpackKey(Peer& p, const Bytes& packed);
  Peer& peerOf(int rank);
  [[noreturn]] void throwFailed(const Peer& p, const std::string& during);
  void connect(const std::vector<int>& ranks, const std::vector<Bytes>& addresses);
  void setAmHandler(unsigned id, ucp_am_recv_callback_t cb);
  /// Waits for `request` on `p`'s behalf; a failure marks `p` failed and throws RemoteError.
  void finish(Peer& p, ucs_status_ptr_t request, const Deadline& deadline, const char* during);
  void sendAm(Peer& p, unsigned id, const void* header, size_t headerBytes, const void* data,
              size_t dataBytes, const Deadline& deadline, const char* during);
  /// Active-message handlers (run inside progress, under the worker lock).
  static ucs_status_t onSignalAm(void* arg, const void* header, size_t headerBytes, void* data,
                                 size_t bytes, const ucp_am_recv_param_t* param);
  static ucs_status_t onFailureAm(void* arg, const void* header, size_t headerBytes, void* data,
                                  size_t bytes, const ucp_am_recv_param_t* param);
  static ucs_status_t onLeaveAm(void* arg, const void* header, size_t headerBytes, void* data,
                                size_t bytes, const ucp_am_recv_param_t* param);
  /// At an orderly end (no failure in the group): every live peer is told, after everything
  /// this rank sent it has landed, that this rank leaves.
  void announceLeaving();
  void closeEndpoints();
  /// Releases everything UCX handed out, then the worker (the destructor, or a failed
  /// constructor).
  void teardown();

  const UcpLibrary& library_;
  GroupFailure* failure_;
  int rank_;
  std::unique_ptr<UcxWorker> worker_;
  std::vector<std::unique_ptr<Peer>> peers_;  // by rank; null for ranks not on ucx
  std::unique_ptr<UcxMessages> messages_;     // made once connected
  std::mutex regionsMu_;
  std::map<uint64_t, Region> regions_;
  std::mutex windowsMu_;
  std::set<UcxPeerWindow*> windows_;  // under windowsMu_
  bool closed_ = false;               // under windowsMu_
};

// A peer's window: the address and remote key of its data (signals travel as messages, with
// the last small put when one waits).
class UcxPeerWindow : public PeerWindow {
 public:
  UcxPeerWindow(UcxTransport* t, int peer, uint64_t id, const WindowWire& wire, ucp_rkey_h dataKey)
      : transport_(t), peer_(peer), id_(id), wire_(wire), dataKey_(dataKey) {}
  ~UcxPeerWindow() override {
    if (transport_->forget(this)) releaseKeys();
  }
  void* directData() override { return nullptr; }
  SignalCell* directSignals() override { return nullptr; }
  void put(size_t offset, const void* src, size_t bytes) override {
    CTRAN_ASSERT(offset + bytes <= wire_.dataBytes, "put beyond the window checked by the caller");
    transport_->checkPeer(peer_);  // a put to a peer known failed raises, carried or not
    if (bytes == 0) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!hasCarried_ && bytes <= kCarriedPutBytes) {
      const auto* from = static_cast<const char*>(src);
      carried_.assign(from, from + bytes);
      carriedOffset_ = offset;
      hasCarried_ = true;
      return;
    }
    putCarried();  // an earlier small put lands before this one
    transport_->putTo(peer_, wire_.dataAddress + offset, dataKey_, src, bytes);
  }
  void signal(int slot, uint64_t delta) override {
    CTRAN_ASSERT(slot >= 0 && static_cast<uint64_t>(slot) < wire_.numSignals);
    std::lock_guard<std::mutex> lock(mu_);
    const bool carry = std::exchange(hasCarried_, false);
    transport_->signalPeer(peer_, id_, slot, delta, carriedOffset_,
                           carry ? carried_.data() : nullptr, carry ? carried_.size() : 0);
  }
  /// Destroys the remote key (under the worker lock); called once, by whoever ends first.
  void releaseKeys() {
    auto l = transport_->worker().lock();
    transport_->worker().api().ucp_rkey_destroy(dataKey_);
  }

 private:
  /// Sends the small put waiting for a signal as a put of its own (under mu_).
  void putCarried() {
    if (!std::exchange(hasCarried_, false)) return;
    transport_->putTo(peer_, wire_.dataAddress + carriedOffset_, dataKey_, carried_.data(),
                      carried_.size());
  }

  std::mutex mu_;  // a put waiting for the next signal, and the order of puts and signals
  std::vector<char> carried_;
  uint64_t carriedOffset_ = 0;
  bool hasCarried_ = false;
  UcxTransport* transport_;
  int peer_;
  uint64_t id_;
  WindowWire wire_;
  ucp_rkey_h dataKey_;
};

UcxTransport::UcxTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                           GroupFailure* failure)
    : library_(UcpLibrary::get()), failure_(failure), rank_(bootstrap.rank()) {
  worker_ = std::make_unique<UcxWorker>(library_);
  setAmHandler(kSignalAm, &UcxTransport::onSignalAm);
  setAmHandler(kFailureAm, &UcxTransport::onFailureAm);
  setAmHandler(kLeaveAm, &UcxTransport::onLeaveAm);
  peers_.resize(bootstrap.nranks());
  // Each rank's worker address, its GPU memory state appended.
  Bytes mine = worker_->address();
  mine.push_back(gpuMemoryState(worker_->api(), worker_->context()));
  auto addresses = bootstrap.allGather(mine);
  std::vector<uint8_t> gpuStates;
  for (Bytes& a : addresses) {
    gpuStates.push_back(a.empty() ? uint8_t{kGpuMemoryOff} : a.back());
    if (!a.empty()) a.pop_back();
  }
  worker_->startProgress();  // wire-up needs both sides' progress
  try {
    // Lower ranks first: every pair connects from its higher rank only, then the lower rank's
    // endpoint finds the connection made. Both ranks of a pair connecting at once over tcp
    // made UCX reset one of the two connections now and then, failing the pair's endpoints.
    const int me = bootstrap.rank();
    std::vector<int> lower, higher;
    for (int p : peers) (p < me ? lower : higher).push_back(p);
    connect(lower, addresses);
    bootstrap.barrier();
    connect(higher, addresses);
    // A rank whose peers are all lower is done first; its worker must live until they are too.
    bootstrap.barrier();
    std::vector<ucp_ep_h> endpoints(peers_.size(), nullptr);
    for (int p : peers) endpoints[p] = peers_[p]->ep;
    std::string why;
    const bool gpuMemory = agreeOnGpuMemory(gpuStates, &why);
    messages_ = std::make_unique<UcxMessages>(*worker_, me, std::move(endpoints), gpuMemory);
    CTRAN_INFO("ucx transport: messages ",
               gpuMemory ? "may carry GPU memory (every rank's UCX drives CUDA memory)"
                         : strCat("carry host memory only (", why, ")"));
  } catch (...) {
    // No destructor runs for a constructor that throws: the progress thread would go on
    // calling the error handlers of endpoints whose Peer the members' destruction frees.
    teardown();
    throw;
  }
  CTRAN_INFO("ucx transport: connected to ", peers.size(), " peers with UCX ", library_.version(),
             " from ", library_.path());
}

// Creates the endpoints to `ranks` from their worker addresses, then flushes them, which returns
// once UCX has connected each (so the first put or signal of a collective does not pay for the
// connection, and a peer that cannot be reached fails here).
void UcxTransport::connect(const std::vector<int>& ranks, const std::vector<Bytes>& addresses) {
  const UcpApi& api = worker_->api();
  for (int p : ranks) {
    CTRAN_CHECK(!addresses[p].empty(), RemoteError, "ucx transport: rank ", p,
                " sent no worker address");
    auto peer = std::make_unique<Peer>();
    peer->rank = p;
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[p].data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &onEndpointError;
    params.err_handler.arg = peer.get();
    {
      auto l = worker_->lock();
      worker_->checkStatus(api.ucp_ep_create(worker_->worker(), &params, &peer->ep),
                           "ucp_ep_create");
    }
    peers_[p] = std::move(peer);
  }
  const Deadline deadline = Deadline::after();
  for (int p : ranks) {
    ucp_request_param_t param = {};
    ucs_status_ptr_t request;
    {
      auto l = worker_->lock();
      request = api.ucp_ep_flush_nbx(peers_[p]->ep, &param);
    }
    finish(*peers_[p], request, deadline, " (connection)");
  }
}

void UcxTransport::setAmHandler(unsigned id, ucp_am_recv_callback_t cb) {
  ucp_am_handler_param_t param = {};
  param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                     UCP_AM_HANDLER_PARAM_FIELD_ARG;
  param.id = id;
  param.cb = cb;
  param.arg = this;
  auto l = worker_->lock();
  worker_->checkStatus(worker_->api().ucp_worker_set_am_recv_handler(worker_->worker(), &param),
                       "ucp_worker_set_am_recv_handler");
}

UcxTransport::~UcxTransport() {
  announceLeaving();
  teardown();
}

void UcxTransport::announceLeaving() {
  if (failure_ != nullptr && failure_->current().has_value()) return;
  const Deadline deadline = Deadline::after(kCloseMs);
  const LeaveAm am{rank_, 0};
  const UcpApi& api = worker_->api();
  // Two rounds over all live peers at once, so many peers cost two round trips: a flush, which
  // lands this rank's last puts and signals (the peer then applies the departure after them,
  // as peerLeft promises), then the departure message.
  for (int round = 0; round < 2; ++round) {
    std::vector<std::pair<Peer*, ucs_status_ptr_t>> pending;
    {
      auto l = worker_->lock();
      for (auto& p : peers_) {
        if (!p || p->failed.load() || p->left.load()) continue;
        ucp_request_param_t param = {};
        if (round == 0) {
          pending.emplace_back(p.get(), api.ucp_ep_flush_nbx(p->ep, &param));
        } else {
          param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
          param.flags = UCP_AM_SEND_FLAG_EAGER;
          pending.emplace_back(
              p.get(), api.ucp_am_send_nbx(p->ep, kLeaveAm, &am, sizeof(am), nullptr, 0, &param));
        }
      }
    }
    for (auto& [p, request] : pending) {
      try {
        finish(*p, request, deadline, round == 0 ? " (flush before leaving)" : " (departure)");
      } catch (const Error& e) {
        CTRAN_INFO("ucx transport: could not tell rank ", p->rank, " this rank leaves: ", e.what());
      }
    }
  }
}

void UcxTransport::teardown() {
  worker_->stopProgress();
  messages_.reset();  // its endpoint to this rank goes before the worker
  {
    std::lock_guard<std::mutex> lock(windowsMu_);
    for (UcxPeerWindow* w : windows_) w->releaseKeys();
    windows_.clear();
    closed_ = true;
  }
  closeEndpoints();
  const UcpApi& api = worker_->api();
  auto l = worker_->lock();
  for (auto& [id, r] : regions_) {
    api.ucp_mem_unmap(worker_->context(), r.dataMem);
  }
  regions_.clear();
  l.unlock();
  worker_.reset();
}

// Closes every endpoint: live peers by a flush (what this rank sent last, its final signals,
// still reaches them), failed ones by force; all at once, so a slow peer costs one wait. After
// a failure of the group nothing this rank sent matters any more: every endpoint goes by force
// (a flush toward a peer whose link is down would wait kCloseMs).
void UcxTransport::closeEndpoints() {
  const UcpApi& api = worker_->api();
  const bool groupFailed = failure_ != nullptr && failure_->current().has_value();
  std::vector<std::pair<int, ucs_status_ptr_t>> pending;
  {
    auto l = worker_->lock();
    for (auto& p : peers_) {
      if (!p) continue;
      ucp_request_param_t param = {};
      param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      param.flags = groupFailed || p->failed.load() ? UCP_EP_CLOSE_FLAG_FORCE : 0;
      pending.emplace_back(p->rank, api.ucp_ep_close_nbx(p->ep, &param));
    }
  }
  Deadline deadline = Deadline::after(kCloseMs);
  for (auto& [rank, request] : pending) {
    try {
      ucs_status_t s = worker_->wait(request, deadline, [r = rank] {
        return strCat("the ucx endpoint to rank ", r, " to close");
      });
      if (s != UCS_OK && s != UCS_ERR_CANCELED) {
        CTRAN_INFO("ucx transport: closing the endpoint to rank ", rank, ": ", statusText(api, s));
      }
    } catch (const Error& e) {
      CTRAN_WARN("ucx transport: ", e.what());
    }
  }
}

ucp_mem_h UcxTransport::mapMemory(void* address, size_t bytes) {
  ucp_mem_map_params_t params = {};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  params.address = address;
  params.length = bytes;
  ucp_mem_h mem = nullptr;
  auto l = worker_->lock();
  worker_->checkStatus(worker_->api().ucp_mem_map(worker_->context(), &params, &mem),
                       "ucp_mem_map");
  return mem;
}

Bytes UcxTransport::packKey(ucp_mem_h mem) {
  const UcpApi& api = worker_->api();
  void* buffer = nullptr;
  size_t size = 0;
  auto l = worker_->lock();
  worker_->checkStatus(api.ucp_rkey_pack(worker_->context(), mem, &buffer, &size), "ucp_rkey_pack");
  Bytes out(static_cast<uint8_t*>(buffer), static_cast<uint8_t*>(buffer) + size);
  api.ucp_rkey_buffer_release(buffer);
  return out;
}

ucp_rkey_h UcxTransport::unpackKey(Peer& p, const Bytes& packed) {
  ucp_rkey_h key = nullptr;
  auto l = worker_->lock();
  ucs_status_t s = worker_->api().ucp_ep_rkey_unpack(p.ep, packed.data(), &key);
  if (s != UCS_OK) {
    throw RemoteError(strCat("ucx transport: rank ", p.rank,
                             "'s remote key does not unpack: ", statusText(worker_->api(), s)));
  }
  return key;
}

Bytes UcxTransport::exportWindow(const LocalWindow& window) {
  Region r;
  r.window = window;
  r.dataMem = mapMemory(window.data, window.bytes);
  WindowWire wire{reinterpret_cast<uint64_t>(window.data), window.bytes,
                  static_cast<uint64_t>(window.numSignals), packKey(r.dataMem)};
  std::lock_guard<std::mutex> lock(regionsMu_);
  regions_[window.id] = std::move(r);
  return wire.encode();
}

std::unique_ptr<PeerWindow> UcxTransport::importWindow(int peer, const LocalWindow& mine,
                                                       const Bytes& handle) {
  Peer& p = peerOf(peer);
  WindowWire wire = WindowWire::decode(handle, peer);
  CTRAN_CHECK(wire.dataBytes == mine.bytes && wire.numSignals == uint64_t(mine.numSignals),
              RemoteError, "ucx transport: rank ", peer, "'s window ", mine.id, " has ",
              wire.dataBytes, " bytes and ", wire.numSignals, " signals, this rank's ", mine.bytes,
              " and ", mine.numSignals);
  ucp_rkey_h dataKey = unpackKey(p, wire.dataKey);
  auto w = std::make_unique<UcxPeerWindow>(this, peer, mine.id, wire, dataKey);
  std::lock_guard<std::mutex> lock(windowsMu_);
  windows_.insert(w.get());
  return w;
}

bool UcxTransport::forget(UcxPeerWindow* w) {
  std::lock_guard<std::mutex> lock(windowsMu_);
  return !closed_ && windows_.erase(w) == 1;
}

void UcxTransport::releaseWindow(uint64_t windowId) {
  Region r;
  {
    std::lock_guard<std::mutex> lock(regionsMu_);
    auto it = regions_.find(windowId);
    if (it == regions_.end()) return;
    r = std::move(it->second);
    regions_.erase(it);
  }
  auto l = worker_->lock();
  worker_->api().ucp_mem_unmap(worker_->context(), r.dataMem);
}

Peer& UcxTransport::peerOf(int rank) {
  CTRAN_ASSERT(rank >= 0 && rank < static_cast<int>(peers_.size()) && peers_[rank], "rank ", rank,
               " is not reached over ucx");
  return *peers_[rank];
}

void UcxTransport::throwFailed(const Peer& p, const std::string& during) {
  throw RemoteError(strCat("peer rank ", p.rank, " is unreachable over ucx", during,
                           ": its endpoint failed with ",
                           statusText(worker_->api(), static_cast<ucs_status_t>(p.status.load())),
                           " (it exited, failed or lost its link)"));
}

void UcxTransport::checkPeer(int peer) {
  Peer& p = peerOf(peer);
  // A departed peer's endpoint closes after its departure message: no failure (PeerGroup asks
  // whether a wait on it still expects something).
  if (p.failed.load() && !p.left.load()) throwFailed(p, "");
}

bool UcxTransport::peerLeft(int peer) const {
  return peer >= 0 && peer < static_cast<int>(peers_.size()) && peers_[peer] &&
         peers_[peer]->left.load();
}

void UcxTransport::finish(Peer& p, ucs_status_ptr_t request, const Deadline& deadline,
                          const char* during) {
  ucs_status_t s = worker_->wait(
      request, deadline,
      [&] { return strCat("the ucx operation", during, " to rank ", p.rank, " to complete"); },
      [&] {
        if (p.failed.load() && !p.left.load()) throwFailed(p, during);
      },
      p.rank);
  if (s != UCS_OK) {
    if (p.left.load()) return;  // the peer destroyed its group: it needs nothing more
    if (!p.failed.load()) p.status.store(s);
    p.failed.store(true);
    throwFailed(p, during);
  }
}

void UcxTransport::putTo(int peer, uint64_t remote, ucp_rkey_h key, const void* src, size_t bytes) {
  Peer& p = peerOf(peer);
  if (p.left.load()) return;  // the peer destroyed its group: it needs nothing more
  if (p.failed.load()) throwFailed(p, " (put)");
  ucp_request_param_t param = {};
  ucs_status_ptr_t request;
  {
    auto l = worker_->lock();
    request = worker_->api().ucp_put_nbx(p.ep, src, bytes, remote, key, &param);
  }
  p.unflushed.store(true);
  finish(p, request, Deadline::after(), " (put)");
}

void UcxTransport::sendAm(Peer& p, unsigned id, const void* header, size_t headerBytes,
                          const void* data, size_t dataBytes, const Deadline& deadline,
                          const char* during) {
  if (p.left.load()) return;  // the peer destroyed its group: it needs nothing more
  if (p.failed.load()) throwFailed(p, during);
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_EAGER;  // the handler reads the data in place
  ucs_status_ptr_t request;
  {
    auto l = worker_->lock();
    request =
        worker_->api().ucp_am_send_nbx(p.ep, id, header, headerBytes, data, dataBytes, &param);
  }
  finish(p, request, deadline, during);
}

void UcxTransport::signalPeer(int peer, uint64_t windowId, int slot, uint64_t delta,
                              uint64_t offset, const void* carried, size_t carriedBytes) {
  Peer& p = peerOf(peer);
  if (p.left.load()) return;  // the peer destroyed its group: it needs nothing more
  if (p.failed.load()) throwFailed(p, " (signal)");
  const Deadline deadline = Deadline::after();
  const UcpApi& api = worker_->api();
  // Release semantics by remote completion, not by delivery order: ucp_worker_fence orders
  // operations across an endpoint's lanes only in UCX's strong-fence mode (not in 1.13), and
  // networks such as EFA reorder.
  if (p.unflushed.exchange(false)) {
    ucp_request_param_t param = {};
    ucs_status_ptr_t request;
    {
      auto l = worker_->lock();
      request = api.ucp_ep_flush_nbx(p.ep, &param);
    }
    finish(p, request, deadline, " (flush before a signal)");
  }
  SignalAm am{windowId, delta, offset, slot, 0};
  sendAm(p, kSignalAm, &am, sizeof(am), carried, carriedBytes, deadline, " (signal)");
}

ucs_status_t UcxTransport::onSignalAm(void* arg, const void* header, size_t headerBytes, void* data,
                                      size_t bytes, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxTransport*>(arg);
  const bool inPlace = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0;
  if (headerBytes != sizeof(SignalAm) || bytes > kCarriedPutBytes || !inPlace) {
    CTRAN_WARN("ucx transport: dropping a signal message of ", headerBytes, " header and ", bytes,
               " data bytes");
    return UCS_OK;
  }
  SignalAm am;
  std::memcpy(&am, header, sizeof(am));
  std::lock_guard<std::mutex> lock(self->regionsMu_);
  auto it = self->regions_.find(am.windowId);
  if (it == self->regions_.end() || am.slot < 0 || am.slot >= it->second.window.numSignals) {
    // A signal to a window released here: a peer's last signal that completed on its side
    // (and let it leave through a bootstrap barrier) before this rank's progress applied it.
    // No wait can need it any more (the window is gone), so it is dropped.
    CTRAN_INFO("ucx transport: dropping a signal to window ", am.windowId, " slot ", am.slot);
    return UCS_OK;
  }
  const LocalWindow& w = it->second.window;
  if (bytes > 0) {
    if (am.offset > w.bytes || bytes > w.bytes - am.offset) {
      CTRAN_WARN("ucx transport: dropping a signal whose put of ", bytes, " bytes at ", am.offset,
                 " lies beyond window ", am.windowId, " (", w.bytes, " bytes)");
      return UCS_OK;
    }
    std::memcpy(static_cast<char*>(w.data) + am.offset, data, bytes);
  }
  signalAdd(w.signals + am.slot, am.delta);
  return UCS_OK;
}

void UcxTransport::broadcastFailure(const FailureReport& report) {
  FailureAm am{report.culprit, report.reporter, report.timedOut ? 1u : 0u,
               static_cast<uint32_t>(std::min<size_t>(report.cause.size(), kMaxCause))};
  for (auto& p : peers_) {
    if (!p || p->failed.load() || p->left.load()) continue;
    try {
      sendAm(*p, kFailureAm, &am, sizeof(am), report.cause.data(), am.causeBytes,
             Deadline::after(kReportMs), " (failure report)");
    } catch (const Error& e) {
      CTRAN_INFO("ucx transport: could not tell rank ", p->rank, " about the failure: ", e.what());
    }
  }
}

ucs_status_t UcxTransport::onFailureAm(void* arg, const void* header, size_t headerBytes,
                                       void* data, size_t bytes, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxTransport*>(arg);
  FailureAm am;
  const bool inPlace = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0;
  if (headerBytes != sizeof(am) || !inPlace) {
    CTRAN_WARN("ucx transport: dropping a malformed failure report");
    return UCS_OK;
  }
  std::memcpy(&am, header, sizeof(am));
  if (am.causeBytes != bytes || bytes > kMaxCause) {
    CTRAN_WARN("ucx transport: dropping a failure report of ", bytes, " bytes");
    return UCS_OK;
  }
  if (self->failure_) {
    self->failure_->adopt({am.culprit, am.reporter, am.timedOut != 0,
                           std::string(static_cast<const char*>(data), bytes)});
  }
  return UCS_OK;
}

ucs_status_t UcxTransport::onLeaveAm(void* arg, const void* header, size_t headerBytes,
                                     void* /*data*/, size_t bytes,
                                     const ucp_am_recv_param_t* /*param*/) {
  auto* self = static_cast<UcxTransport*>(arg);
  LeaveAm am;
  if (headerBytes != sizeof(am) || bytes != 0) {
    CTRAN_WARN("ucx transport: dropping a malformed departure message");
    return UCS_OK;
  }
  std::memcpy(&am, header, sizeof(am));
  if (am.rank < 0 || am.rank >= static_cast<int>(self->peers_.size()) || !self->peers_[am.rank]) {
    CTRAN_WARN("ucx transport: dropping a departure message from rank ", am.rank);
    return UCS_OK;
  }
  self->peers_[am.rank]->left.store(true);
  return UCS_OK;
}

}  // namespace ucx

std::string ucxUnavailableReason() {
  std::string why;
  return ucx::UcpLibrary::tryGet(&why) != nullptr ? std::string() : why;
}

std::string ucxLibraryDescription() {
  std::string why;
  const ucx::UcpLibrary* lib = ucx::UcpLibrary::tryGet(&why);
  if (lib == nullptr) return "";
  return strCat("UCX ", lib->version(), " from ", lib->path(), " (", lib->source(), ")");
}

std::unique_ptr<Transport> createUcxTransport(Bootstrap& bootstrap, const std::vector<int>& peers,
                                              GroupFailure* failure) {
  return std::make_unique<ucx::UcxTransport>(bootstrap, peers, failure);
}

}  // namespace ctran
