// Implementation of shm_transport.hpp.
#include "shm_transport.hpp"

#include <cstring>

#include "ctran/checks.hpp"
#include "shm_segment.hpp"

namespace ctran {
namespace {

// A peer's window mapped into this process: put is a memcpy, signal an atomic add.
class ShmPeerWindow : public PeerWindow {
 public:
  ShmPeerWindow(ShmSegment segment, size_t dataOffset, size_t bytes, int numSignals)
      : segment_(std::move(segment)),
        dataOffset_(dataOffset),
        bytes_(bytes),
        numSignals_(numSignals) {}

  void* directData() override { return static_cast<char*>(segment_.data()) + dataOffset_; }
  SignalCell* directSignals() override { return static_cast<SignalCell*>(segment_.data()); }

  void put(size_t offset, const void* src, size_t bytes) override {
    CTRAN_ASSERT(offset + bytes <= bytes_, "put beyond the window checked by the caller");
    std::memcpy(static_cast<char*>(directData()) + offset, src, bytes);
  }

  void signal(int slot, uint64_t delta) override {
    CTRAN_ASSERT(slot >= 0 && slot < numSignals_);
    signalAdd(directSignals() + slot, delta);
  }

 private:
  ShmSegment segment_;
  size_t dataOffset_;
  size_t bytes_;
  int numSignals_;
};

}  // namespace

ShmTransport::ShmTransport(const Topology& topology) : pids_(topology.pids) {
  inThisProcess_.resize(topology.nranks);
  for (int p = 0; p < topology.nranks; ++p) {
    inThisProcess_[p] = topology.sameProcess(p, topology.rank);
  }
}

Bytes ShmTransport::exportWindow(const LocalWindow& window) {
  return Bytes(window.segmentName.begin(), window.segmentName.end());
}

std::unique_ptr<PeerWindow> ShmTransport::importWindow(int, const LocalWindow& mine,
                                                       const Bytes& handle) {
  std::string name(handle.begin(), handle.end());
  size_t dataOffset = static_cast<char*>(mine.data) - reinterpret_cast<char*>(mine.signals);
  ShmSegment seg = ShmSegment::open(name, dataOffset + mine.bytes);
  return std::make_unique<ShmPeerWindow>(std::move(seg), dataOffset, mine.bytes, mine.numSignals);
}

void ShmTransport::checkPeer(int peer) {
  if (inThisProcess_[peer]) return;
  if (!processAlive(pids_[peer])) {
    throw RemoteError(strCat("peer rank ", peer, " (pid ", pids_[peer], ") has exited"));
  }
}

}  // namespace ctran
