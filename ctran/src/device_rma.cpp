// Implementation of device_rma.hpp: two DeviceWindows (the caller's memory, the signal slots and
// counters), the wait report, and the checks; the GPU work is device/device_rma_kernels.cu's.
#include "ctran/device_rma.hpp"

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/peer_group.hpp"
#include "device/device_rma_kernels.hpp"

namespace ctran {
namespace {

// This rank's counters, in its signal window's data area: sent[p] then expected[p].
constexpr size_t kCounterBytes = 2 * kMaxDeviceRanks * sizeof(uint64_t);

uint64_t* sentCounter(const DeviceWindowHandle& h, int peer) {
  return reinterpret_cast<uint64_t*>(h.data[h.rank]) + peer;
}

uint64_t* expectedCounter(const DeviceWindowHandle& h, int peer) {
  return reinterpret_cast<uint64_t*>(h.data[h.rank]) + kMaxDeviceRanks + peer;
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
      memory_(group, device, memory),
      signals_(group, device, kCounterBytes, group.nranks()),
      waits_(std::make_unique<MappedWaitReport>(device, "the wait report of a GPU window")) {}

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
      strCat("window ", what, ": rank ", r.rank, "'s wait_signal timed out after ",
             r.timeoutNs / 1000000, " ms waiting for a signal from rank ", r.peer,
             " (expected signal ", r.expected, ", saw ", r.seen,
             "; the limit is the wait's timeout, RCCLX_TIMEOUT_MS by default): the window "
             "failed, and every call on it raises this until it is destroyed"),
      r.peer);
}

void DeviceRma::checkUsable(const char* what, int peer) const {
  checkLive(what);
  group_->validatePeer(peer, what);
}

void DeviceRma::checkFailed() const { checkLive("check_failed"); }

void* DeviceRma::peerData(int peer) const {
  checkUsable("peerData", peer);
  return memory_.handle().data[peer];
}

void DeviceRma::put(int peer, size_t offset, const void* src, size_t bytes, void* stream) {
  checkUsable("put", peer);
  const size_t size = this->bytes();
  CTRAN_CHECK(offset <= size && bytes <= size - offset, InvalidArgument, "window put: offset ",
              offset, " + bytes ", bytes, " exceeds the window size ", size);
  CTRAN_CHECK(src != nullptr || bytes == 0, InvalidArgument, "window put: source is null");
  if (bytes == 0) return;
#ifdef RCCLX_HAVE_GPU
  device::rmaCopy(device(), memory_.handle().data[peer] + offset, src, bytes, stream);
#else
  noGpu("window put");
#endif
}

void DeviceRma::signal(int peer, void* stream) {
  checkUsable("signal", peer);
  const DeviceWindowHandle& h = signals_.handle();
#ifdef RCCLX_HAVE_GPU
  device::rmaSignal(device(), h.signals[peer] + h.rank, sentCounter(h, peer), stream);
#else
  (void)h;
  noGpu("window signal");
#endif
}

void DeviceRma::waitSignal(int peer, void* stream, int64_t timeoutMs) {
  checkUsable("wait_signal", peer);
  const DeviceWindowHandle& h = signals_.handle();
  const int64_t ms = timeoutMs >= 0 ? timeoutMs : knob::RCCLX_TIMEOUT_MS();
  const uint64_t timeoutNs = static_cast<uint64_t>(ms > 0 ? ms : 1) * 1000000ull;
#ifdef RCCLX_HAVE_GPU
  device::rmaWait(device(), h.signals[h.rank] + peer, expectedCounter(h, peer), h.rank, peer,
                  waits_->bound(timeoutNs), stream);
#else
  (void)h, (void)timeoutNs;
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
  // The memory window's collective destroy synchronises this GPU and meets every rank, after
  // which no peer signals either: the signal window then needs no second barrier.
  memory_.destroy(collective);
  signals_.destroy(false);
  waits_.reset();
}

}  // namespace ctran
