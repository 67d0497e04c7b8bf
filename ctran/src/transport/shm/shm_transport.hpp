// The shm transport: peers on this host map each other's window segments and load and store
// them directly.
#pragma once

#include <vector>

#include "ctran/topology.hpp"
#include "ctran/transport.hpp"

namespace ctran {

class ShmTransport : public Transport {
 public:
  explicit ShmTransport(const Topology& topology);
  TransportKind kind() const override { return TransportKind::kShm; }
  Bytes exportWindow(const LocalWindow& window) override;
  std::unique_ptr<PeerWindow> importWindow(int peer, const LocalWindow& mine,
                                           const Bytes& handle) override;
  void releaseWindow(uint64_t) override {}
  /// Throws RemoteError once `peer`'s process has exited. A peer in this very process (ranks
  /// as threads, one process driving several GPUs) lives as long as this rank: never reported.
  void checkPeer(int peer) override;

 private:
  std::vector<int64_t> pids_;
  std::vector<bool> inThisProcess_;
};

}  // namespace ctran
