// Graph registration: an allreduce captured into a CUDA graph whose output is ordinary device
// memory (a torch tensor, not a symmetric buffer) gets that output mapped on every peer while
// it is captured, so the captured two-shot kernel stores its all-gather straight into the peers'
// outputs as it does for symmetric buffers, and copies nothing out of staging on replay.
//
// Mapping is collective: every rank exports its output (the IPC handle of the cudaMalloc
// allocation holding it), maps the peers' through the bootstrap, and the call goes zero-copy
// only when every rank could (an output in memory with no IPC handle, e.g. torch's expandable
// segments, keeps every rank staged). So every rank must capture the same allreduces, as the
// kernels already require. Capture, not replay, pays for it: no host work is added to a replay.
//
// The graph owns the mappings (a graph user object): once it and every graph instantiated from
// it are destroyed, the runtime tells us on a thread of its own that may not call it, so the
// mappings are closed at the next call (or property read, or destroy) on the host thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ctran/device_window.hpp"

namespace ctran {
class PeerGroup;
}  // namespace ctran

namespace rcclx::gpu {

class GraphRegistrations {
 public:
  GraphRegistrations(ctran::PeerGroup& group, int device);
  ~GraphRegistrations();
  GraphRegistrations(const GraphRegistrations&) = delete;
  GraphRegistrations& operator=(const GraphRegistrations&) = delete;

  /// When `stream` is capturing: collective over the ranks, maps [recv, recv + bytes) of every
  /// rank here and fills peerRecv (every rank's output as mapped here); returns true then. Returns
  /// false, touching nothing, when the stream is not capturing, when any rank's output cannot be
  /// mapped, or when the outputs do not sit alike modulo 16 bytes (outputsAlike). Throws
  /// TimeoutError when a peer does not reach the call within RCCLX_TIMEOUT_MS, CudaError when
  /// the runtime refuses to give the graph the mappings.
  bool mapCapturedOutput(void* recv, size_t bytes, void* stream,
                         char* (&peerRecv)[ctran::kMaxDeviceRanks]);
  /// Whether `stream` is capturing a graph (false in builds that cannot register).
  bool capturing(void* stream) const { return captureGraph(stream) != nullptr; }
  /// Closes the mappings of graphs destroyed since the last call (host thread).
  void closeReleased();
  /// Mappings held for live graphs (after closeReleased()).
  size_t held();
  /// Closes every mapping, live graphs' too (their replays are invalid from here on).
  void destroy();

  /// The mappings and the registrations whose graph is gone (shared with the graphs' release
  /// callbacks, which may outlive this object).
  struct Shared;

 private:
  /// The graph `stream` is capturing into; null when it is not, or the build cannot register.
  void* captureGraph(void* stream) const;

  ctran::PeerGroup* group_;
  int device_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace rcclx::gpu
