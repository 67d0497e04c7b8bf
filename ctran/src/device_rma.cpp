// Implementation of device_rma.hpp: two DeviceWindows (the caller's memory, the signal slots and
// counters) and the bounds checks; the GPU work is device/device_rma_kernels.cu's.
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

DeviceRma::DeviceRma(PeerGroup& group, int device, DeviceWindow::UserMemory memory)
    : group_(&group),
      memory_(group, device, memory),
      signals_(group, device, kCounterBytes, group.nranks()) {}

DeviceRma::~DeviceRma() {
  if (!destroyed_) destroy(false);
}

void DeviceRma::checkUsable(const char* what, int peer) const {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "DeviceRma ", what, ": already destroyed");
  group_->validatePeer(peer, what);
}

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
  checkUsable("waitSignal", peer);
  const DeviceWindowHandle& h = signals_.handle();
  const int64_t ms = timeoutMs >= 0 ? timeoutMs : knob::RCCLX_TIMEOUT_MS();
  const uint64_t timeoutNs = static_cast<uint64_t>(ms > 0 ? ms : 1) * 1000000ull;
#ifdef RCCLX_HAVE_GPU
  device::rmaWait(device(), h.signals[h.rank] + peer, expectedCounter(h, peer), h.rank, peer,
                  timeoutNs, stream);
#else
  (void)h, (void)timeoutNs;
  noGpu("window wait_signal");
#endif
}

void DeviceRma::destroy(bool collective) {
  CTRAN_CHECK(!destroyed_, InvalidUsage, "DeviceRma destroy: already destroyed");
  destroyed_ = true;
  // The memory window's collective destroy synchronises this GPU and meets every rank, after
  // which no peer signals either: the signal window then needs no second barrier.
  memory_.destroy(collective);
  signals_.destroy(false);
}

}  // namespace ctran
