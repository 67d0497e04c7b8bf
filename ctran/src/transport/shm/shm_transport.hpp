// The shm transport: peers on this host map each other's window segments and load and store
// them directly.
#pragma once

#include <vector>

#include "ctran/topology.hpp"
#include "ctran/transport.hpp"

namespace ctran {

class ShmTransport : public Transport {
 public:
  explicit ShmTransport(const Topology& topology) : pids_(topology.pids) {}
  TransportKind kind() const override { return TransportKind::kShm; }
  Bytes exportWindow(const LocalWindow& window) override;
  std::unique_ptr<PeerWindow> importWindow(int peer, const LocalWindow& mine,
                                           const Bytes& handle) override;
  void releaseWindow(uint64_t) override {}
  void checkPeer(int peer) override;

 private:
  std::vector<int64_t> pids_;
};

}  // namespace ctran
