// Implementation of window.hpp: collective creation, bounds-checked put / signal / wait.
#include "ctran/window.hpp"

#include <cstring>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "transport/shm/shm_segment.hpp"

namespace ctran {
namespace {

constexpr size_t kPage = 4096;

size_t signalAreaBytes(int numSignals) {
  size_t b = static_cast<size_t>(numSignals) * sizeof(SignalCell);
  return (b + kPage - 1) / kPage * kPage;
}

// One rank's handles, shm's and ucx's, in one blob: each rank exchanges them in a single
// allGather whatever transports it uses (an empty part for a transport it does not use).
Bytes joinHandles(const Bytes& shm, const Bytes& ucx) {
  uint64_t n = shm.size();
  Bytes out(reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + sizeof(n));
  out.insert(out.end(), shm.begin(), shm.end());
  out.insert(out.end(), ucx.begin(), ucx.end());
  return out;
}

std::pair<Bytes, Bytes> splitHandles(const Bytes& blob, int rank) {
  uint64_t n = 0;
  CTRAN_CHECK(blob.size() >= sizeof(n), RemoteError, "createWindow: rank ", rank,
              " sent a malformed window handle");
  std::memcpy(&n, blob.data(), sizeof(n));
  CTRAN_CHECK(n <= blob.size() - sizeof(n), RemoteError, "createWindow: rank ", rank,
              " sent a malformed window handle");
  auto shmEnd = blob.begin() + static_cast<std::ptrdiff_t>(sizeof(n) + n);
  return {Bytes(blob.begin() + sizeof(n), shmEnd), Bytes(shmEnd, blob.end())};
}

bool usesTransport(PeerGroup& group, TransportKind kind) {
  for (int p = 0; p < group.nranks(); ++p) {
    if (group.transportTo(p) == kind) return true;
  }
  return false;
}

}  // namespace

Window::Window(PeerGroup& group, size_t bytes, int numSignals) : group_(&group) {
  CTRAN_CHECK(bytes > 0, InvalidArgument, "createWindow: bytes must be positive, got ", bytes);
  CTRAN_CHECK(numSignals >= 1 && numSignals <= 4096, InvalidArgument, "createWindow: numSignals ",
              numSignals, " must be in [1, 4096]");
  Bootstrap& boot = group.bootstrap();
  const int nranks = group.nranks();
  const int rank = group.rank();
  local_.id = group.nextWindowId_++;
  local_.bytes = bytes;
  local_.numSignals = numSignals;
  // Every rank must ask for the same shape: compare before touching any peer's memory.
  std::string shape = strCat(bytes, " ", numSignals);
  auto shapes = boot.allGather(Bytes(shape.begin(), shape.end()));
  for (int r = 0; r < nranks; ++r) {
    std::string theirs(shapes[r].begin(), shapes[r].end());
    CTRAN_CHECK(theirs == shape, InvalidArgument, "createWindow: size mismatch: this rank (", rank,
                ") asked for '", shape, "' (bytes numSignals) but rank ", r, " for '", theirs, "'");
  }
  local_.segmentName = strCat("/rcclx-", group.jobTag(), "-r", rank, "-w", local_.id);
  size_t sigBytes = signalAreaBytes(numSignals);
  segment_ = std::make_unique<ShmSegment>(ShmSegment::create(local_.segmentName, sigBytes + bytes));
  local_.signals = static_cast<SignalCell*>(segment_->data());
  local_.data = static_cast<char*>(segment_->data()) + sigBytes;
  for (int i = 0; i < numSignals; ++i) {
    new (&local_.signals[i]) SignalCell();
    local_.signals[i].value.store(0);
    local_.signals[i].waiters.store(0);
  }
  try {
    // Export through every transport this rank uses, then import every peer's handle.
    Bytes shmHandle, tcpHandle, ucxHandle;
    if (usesTransport(group, TransportKind::kShm)) {
      shmHandle = group.transport(TransportKind::kShm).exportWindow(local_);
    }
    if (usesTransport(group, TransportKind::kTcp)) {
      tcpHandle = group.transport(TransportKind::kTcp).exportWindow(local_);
    }
    if (usesTransport(group, TransportKind::kUcx)) {
      ucxHandle = group.transport(TransportKind::kUcx).exportWindow(local_);
    }
    auto handles = boot.allGather(joinHandles(shmHandle, ucxHandle));
    peers_.resize(nranks);
    for (int p = 0; p < nranks; ++p) {
      TransportKind k = group.transportTo(p);
      if (k == TransportKind::kShm) {
        peers_[p] = group.transport(k).importWindow(p, local_, splitHandles(handles[p], p).first);
      } else if (k == TransportKind::kTcp) {
        peers_[p] = group.transport(k).importWindow(p, local_, tcpHandle);
      } else if (k == TransportKind::kUcx) {
        peers_[p] = group.transport(k).importWindow(p, local_, splitHandles(handles[p], p).second);
      }
    }
    // Once every peer has mapped this segment its name is no longer needed: unlink it now, so
    // that a process dying later leaves nothing in /dev/shm.
    boot.barrier();
  } catch (...) {
    // Registrations with the transports go with the memory (a ucx memory map must not outlive it).
    peers_.clear();
    for (TransportKind k : {TransportKind::kTcp, TransportKind::kUcx}) {
      if (usesTransport(group, k)) group.transport(k).releaseWindow(local_.id);
    }
    segment_->unlink();
    throw;
  }
  segment_->unlink();
  CTRAN_TRACE("window ", local_.id, ": ", bytes, " bytes, ", numSignals, " signals");
}

Window::~Window() {
  try {
    if (!destroyed_) destroy();
  } catch (const std::exception& e) {
    CTRAN_WARN("window destroy: ", e.what());
  }
}

void Window::checkUsable(const char* what) const {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "window ", local_.id, " ", what,
              ": the window was already destroyed");
  CTRAN_CHECK(!group_->destroyed(), InvalidUsage, "window ", local_.id, " ", what,
              ": its peer group was already destroyed");
}

void Window::checkSlot(int slot, const char* what) const {
  CTRAN_CHECK(slot >= 0 && slot < local_.numSignals, InvalidArgument, "window ", what, ": slot ",
              slot, " is out of range for a window with ", local_.numSignals, " signal slots");
}

void* Window::data() const {
  checkUsable("data");
  return local_.data;
}

SignalCell* Window::signals() const {
  checkUsable("signals");
  return local_.signals;
}

void* Window::peerData(int peer) const {
  checkUsable("peerData");
  group_->validatePeer(peer, "window peerData");
  if (peer == group_->rank()) return local_.data;
  return peers_[peer]->directData();
}

SignalCell* Window::peerSignals(int peer) const {
  checkUsable("peerSignals");
  group_->validatePeer(peer, "window peerSignals");
  if (peer == group_->rank()) return local_.signals;
  return peers_[peer]->directSignals();
}

void Window::put(int peer, size_t offset, const void* src, size_t bytes) {
  checkUsable("put");
  group_->validatePeer(peer, "window put");
  CTRAN_CHECK(offset <= local_.bytes && bytes <= local_.bytes - offset, InvalidArgument,
              "window put: offset ", offset, " + bytes ", bytes, " exceeds the window size ",
              local_.bytes);
  CTRAN_CHECK(src != nullptr || bytes == 0, InvalidArgument, "window put: source is null");
  if (bytes == 0) return;
  if (peer == group_->rank()) {
    std::memmove(static_cast<char*>(local_.data) + offset, src, bytes);
    return;
  }
  try {
    peers_[peer]->put(offset, src, bytes);
  } catch (const RemoteError&) {
    raiseAsGroup(peer);
    throw;
  }
}

void Window::signal(int peer, int slot, uint64_t delta) {
  checkUsable("signal");
  group_->validatePeer(peer, "window signal");
  checkSlot(slot, "signal");
  if (peer == group_->rank()) {
    signalAdd(local_.signals + slot, delta);
    return;
  }
  try {
    peers_[peer]->signal(slot, delta);
  } catch (const RemoteError&) {
    raiseAsGroup(peer);
    throw;
  }
}

void Window::raiseAsGroup(int peer) {
  // The transport's own error names only the connection it failed on. What a wait on `peer`
  // raises is the group's failure if one was reported, else this peer's, reported to every rank
  // (so the survivors do not get a report without a culprit).
  group_->checkPeer(peer);
}

uint64_t Window::waitSignal(int slot, uint64_t value, int fromPeer, int64_t timeoutMs) {
  checkUsable("waitSignal");
  checkSlot(slot, "waitSignal");
  if (fromPeer >= 0) group_->validatePeer(fromPeer, "window waitSignal");
  PeerGroup* g = group_;
  return signalWait(
      local_.signals + slot, value, Deadline::after(timeoutMs),
      [&] {
        return strCat("signal ", slot, " of window ", local_.id, " to reach ", value,
                      fromPeer >= 0 ? strCat(" from rank ", fromPeer) : std::string(),
                      " (it is at ", signalRead(local_.signals + slot), ")");
      },
      [&] {
        if (fromPeer >= 0)
          g->checkPeer(fromPeer, [&] { return signalRead(local_.signals + slot) >= value; });
      },
      fromPeer);
}

uint64_t Window::readSignal(int slot) const {
  checkUsable("readSignal");
  checkSlot(slot, "readSignal");
  return signalRead(local_.signals + slot);
}

void Window::destroy() {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "window ", local_.id, " destroy: already destroyed");
  destroyed_ = true;
  // Peers' mappings and keys first, then this window's registrations.
  peers_.clear();
  if (!group_->destroyed()) {
    for (TransportKind k : {TransportKind::kTcp, TransportKind::kUcx}) {
      if (usesTransport(*group_, k)) group_->transport(k).releaseWindow(local_.id);
    }
  }
  segment_.reset();
}

}  // namespace ctran
