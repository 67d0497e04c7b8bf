// Implementation of device_rma.hpp: two DeviceWindows (the caller's memory, if any, and the
// signal slots and counters), the wait report, and the checks; the GPU work is
// device/device_rma_kernels.cu's.
#include "ctran/device_rma.hpp"

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/peer_group.hpp"
#include "device/device_rma_kernels.hpp"

namespace ctran {
namespace {

// This rank's counters, in its signal window's data area: sent[p], expected[p], then the word
// a put's blocks count their arrivals in (rmaPutSignal).
constexpr size_t kCounterBytes = (2 * kMaxDeviceRanks + 1) * sizeof(uint64_t);

uint64_t* sentCounter(const DeviceWindowHandle& h, int peer) {
  return reinterpret_cast<uint64_t*>(h.data[h.rank]) + peer;
}

uint64_t* expectedCounter(const DeviceWindowHandle& h, int peer) {
  return reinterpret_cast<uint64_t*>(h.data[h.rank]) + kMaxDeviceRanks + peer;
}

unsigned* arrivalCounter(const DeviceWindowHandle& h) {
  return reinterpret_cast<unsigned*>(reinterpret_cast<uint64_t*>(h.data[h.rank]) +
                                     2 * kMaxDeviceRanks);
}

#ifndef RCCLX_HAVE_GPU
[[noreturn]] void noGpu(const char* what) {
  throw CudaError(strCat(what, ": this build has no GPU code (built without a CUDA compiler)"));
}
#endif

}  // namespace

// The report is allocated last, by this rank alone: a failure there cannot leave the peers
// waiting in the middle of the windows' collective construction.
DeviceRma::DeviceRma(PeerGroup& group, int device, DeviceWindow::UserMemory memory)
    : group_(&group),
      device_(device),
      name_("window"),
      memory_(std::make_unique<DeviceWindow>(group, device, memory)),
      signals_(group, device, kCounterBytes, group.nranks()),
      waits_(std::make_unique<MappedWaitReport>(device, "the wait report of a GPU window")) {}

DeviceRma::DeviceRma(PeerGroup& group, int device, const char* name)
    : group_(&group),
      device_(device),
      name_(name),
      signals_(group, device, kCounterBytes, group.nranks()),
      waits_(std::make_unique<MappedWaitReport>(device, "the wait report of GPU signals")) {}

DeviceRma::~DeviceRma() {
  if (!destroyed_) destroy(false);
}

void DeviceRma::checkLive(const char* what) const {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "DeviceRma ", what, ": already destroyed");
  if (!waits_->timedOut()) return;
  const WaitReport& r = waits_->report();
  // Sticky: the timed-out wait advanced its expected count without a signal, and the waits
  // after it ended on the abort word, so no later wait could match its peer's signals again.
  throw TimeoutError(
      strCat(name_, " ", what, ": rank ", r.rank, "'s wait_signal timed out after ",
             r.timeoutNs / 1000000, " ms waiting for a signal from rank ", r.peer,
             " (expected signal ", r.expected, ", saw ", r.seen,
             "; the limit is the wait's timeout, RCCLX_TIMEOUT_MS by default): the ", name_,
             " failed, and every call on it raises this until it is destroyed"),
      r.peer);
}

void DeviceRma::checkUsable(const char* what, int peer) const {
  checkLive(what);
  group_->validatePeer(peer, what);
}

void DeviceRma::checkFailed() const { checkLive("check_failed"); }

void DeviceRma::checkMemory(const char* what) const {
  CTRAN_CHECK(memory_ != nullptr, InvalidUsage, name_, " ", what,
              ": it has no memory of its own (its puts name the window they go into)");
}

void* DeviceRma::peerData(int peer) const {
  checkUsable("peerData", peer);
  checkMemory("peerData");
  return memory_->handle().data[peer];
}

void DeviceRma::put(int peer, size_t offset, const void* src, size_t bytes, void* stream) {
  checkUsable("put", peer);
  checkMemory("put");
  copy(memory_->handle(), peer, offset, src, bytes, false, stream);
}

void DeviceRma::put(const DeviceWindow& target, int peer, size_t offset, const void* src,
                    size_t bytes, void* stream) {
  checkUsable("put", peer);
  copy(targetHandle(target), peer, offset, src, bytes, false, stream);
}

void DeviceRma::putSignal(const DeviceWindow& target, int peer, size_t offset, const void* src,
                          size_t bytes, void* stream) {
  checkUsable("put", peer);
  copy(targetHandle(target), peer, offset, src, bytes, true, stream);
}

const DeviceWindowHandle& DeviceRma::targetHandle(const DeviceWindow& target) const {
  CTRAN_CHECK(!target.destroyed(), InvalidArgument, name_,
              " put: the target window was already destroyed");
  const DeviceWindowHandle& h = target.handle();
  CTRAN_CHECK(
      h.rank == group_->rank() && h.nranks == group_->nranks() && target.device() == device_,
      InvalidArgument, name_, " put: the target window is rank ", h.rank, " of ", h.nranks,
      " on GPU ", target.device(), ", not rank ", group_->rank(), " of ", group_->nranks(),
      " on GPU ", device_, " (a window of another group)");
  return h;
}

void DeviceRma::copy(const DeviceWindowHandle& h, int peer, size_t offset, const void* src,
                     size_t bytes, bool signal, void* stream) const {
  const size_t size = h.dataBytes;
  CTRAN_CHECK(offset <= size && bytes <= size - offset, InvalidArgument, "window put: offset ",
              offset, " + bytes ", bytes, " exceeds the window size ", size);
  CTRAN_CHECK(src != nullptr || bytes == 0, InvalidArgument, "window put: source is null");
  char* dst = h.data[peer] + offset;
  if (signal) {
    const device::RmaSignalTarget target{signalSlot(peer), sentCounter(signals_.handle(), peer),
                                         arrivalCounter(signals_.handle())};
#ifdef RCCLX_HAVE_GPU
    device::rmaPutSignal(device_, dst, src, bytes, target, stream);
#else
    (void)target, (void)dst, (void)stream;
    noGpu("window put");
#endif
  } else if (bytes > 0) {
#ifdef RCCLX_HAVE_GPU
    device::rmaCopy(device_, dst, src, bytes, stream);
#else
    noGpu("window put");
#endif
  }
}

uint64_t* DeviceRma::signalSlot(int peer) const {
  const DeviceWindowHandle& h = signals_.handle();
  return h.signals[peer] + h.rank;
}

void DeviceRma::signal(int peer, void* stream) {
  checkUsable("signal", peer);
  uint64_t* slot = signalSlot(peer);
  uint64_t* sent = sentCounter(signals_.handle(), peer);
#ifdef RCCLX_HAVE_GPU
  device::rmaSignal(device_, slot, sent, stream);
#else
  (void)slot, (void)sent, (void)stream;
  noGpu("window signal");
#endif
}

void DeviceRma::waitSignal(int peer, void* stream, int64_t timeoutMs) {
  checkUsable("wait_signal", peer);
  std::vector<uint64_t> counts(static_cast<size_t>(group_->nranks()), 0);
  counts[peer] = 1;
  waitSignals(counts, stream, timeoutMs);
}

void DeviceRma::waitSignals(const std::vector<uint64_t>& counts, void* stream, int64_t timeoutMs) {
  checkLive("wait_signal");
  const DeviceWindowHandle& h = signals_.handle();
  CTRAN_CHECK(counts.size() == static_cast<size_t>(h.nranks), InvalidArgument, name_,
              " wait_signal: ", counts.size(), " counts for a group of ", h.nranks, " ranks");
  device::RmaWaitList list;
  list.slots = h.signals[h.rank];
  list.expected = expectedCounter(h, 0);
  list.rank = h.rank;
  list.nranks = h.nranks;
  bool any = false;
  for (int p = 0; p < h.nranks; ++p) {
    list.counts[p] = counts[p];
    any = any || counts[p] > 0;
  }
  if (!any) return;
  const int64_t ms = timeoutMs >= 0 ? timeoutMs : knob::RCCLX_TIMEOUT_MS();
  const uint64_t timeoutNs = static_cast<uint64_t>(ms > 0 ? ms : 1) * 1000000ull;
#ifdef RCCLX_HAVE_GPU
  device::rmaWait(device_, list, waits_->bound(timeoutNs), stream);
#else
  (void)timeoutNs, (void)stream;
  noGpu("window wait_signal");
#endif
}

void DeviceRma::destroy(bool collective) {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "DeviceRma destroy: already destroyed");
  destroyed_ = true;
  // Without the collective's synchronisation a wait may still be polling: the abort word ends
  // it at once, so freeing the signal slots (which waits for the device) does not wait out its
  // timeout, and no kernel reads the report once it is freed.
  if (!collective) waits_->abort();
  // The first window's collective destroy synchronises this GPU and meets every rank, after
  // which no peer signals either: the signal window then needs no second barrier.
  if (memory_) {
    memory_->destroy(collective);
    signals_.destroy(false);
  } else {
    signals_.destroy(collective);
  }
  waits_.reset();
}

}  // namespace ctran
