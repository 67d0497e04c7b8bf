// The host proxy's captured calls (host_proxy.hpp, "Graph capture"): a call captured into a CUDA
// graph keeps its slot and its host part for the graph's life, and each replay's host node
// queues that host part on the graph channel, a communicator of the same ranks that only
// replays use.
#include <atomic>
#include <memory>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "ctran/peer_group.hpp"
#include "device/host_proxy.hpp"
#include "device/host_proxy_state.hpp"
#include "host/host_backend.hpp"

namespace rcclx::gpu {

namespace {

/// The graph user object's destructor: runs on a runtime thread that may not call the runtime,
/// so the step's memory is freed later on the host thread (releaseGoneGraphs).
void graphGone(void* payload) {
  auto* held = static_cast<std::shared_ptr<HostProxy::GraphStep>*>(payload);
  (*held)->gone.store(true);
  (*held)->anyGone->store(true);
  delete held;
}

}  // namespace

HostProxy::GraphChannel& HostProxy::graphChannel() {
  if (graphs_) return *graphs_;
  // Collective over the communicator's ranks, at the first capture of a call across hosts,
  // which every rank makes at the same point of its program. The host work queued so far is
  // drained first, as a split does: it shares the bootstrap.
  host_.finalize();
  std::vector<int> everyone(static_cast<size_t>(group_.nranks()));
  std::iota(everyone.begin(), everyone.end(), 0);
  auto channel = std::make_unique<GraphChannel>();
  channel->group = std::make_unique<ctran::PeerGroup>(
      group_.bootstrap().subgroup(everyone, "staged-graph-replays"));
  channel->host = std::make_unique<HostBackend>(*channel->group, settings_);
  CTRAN_INFO("rank ", rank_,
             ": GPU calls across hosts captured into graphs replay on a channel of their own");
  graphs_ = std::move(channel);
  return *graphs_;
}

void HostProxy::Call::capture(std::vector<HostPart> parts) {
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_);
  void* graph = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuCaptureGraphOf(stream, &graph), "querying the capture of ", what_);
  CTRAN_CHECK(RCCLX_GPU_GRAPH_OWN && graph != nullptr, ctran::InvalidUsage, what_,
              ": the communicator spans hosts, and this build cannot hand a graph the staging "
              "of its calls (graph user objects need CUDA 11.3 or HIP 5.3); run this call "
              "eagerly");
  auto step = std::make_shared<GraphStep>();
  step->pieces.resize(pieces_);
  const std::vector<size_t> bytes = layOut();
  {
    // Pinned memory and the channel's connections are calls a capture in global mode refuses.
    ctran::GpuRelaxedCapture relaxed;
    GraphChannel& channel = proxy_.graphChannel();
    step->anyGone = channel.anyGone;
    try {
      for (size_t p = 0; p < pieces_; ++p) {
        step->pieces[p].slot.device = proxy_.device_;
        step->pieces[p].slot.reserve(bytes[p]);
      }
    } catch (...) {
      step->release();
      throw;
    }
  }
  std::vector<Slot*> slots;
  std::vector<const uint64_t*> replayWords;
  for (size_t p = 0; p < pieces_; ++p) {
    GraphStep::Piece& piece = step->pieces[p];
    piece.hostPart = std::move(parts[p]);
    piece.at = copiesIn(p, piece.slot.staging());
    slots.push_back(&piece.slot);
    replayWords.push_back(&piece.slot.mappedWords()->replay);
  }
  step->prefixBytes = prefixBytes_;
  step->proxy.store(&proxy_);
  auto held = std::make_unique<std::shared_ptr<GraphStep>>(step);
  const gpuError_t owned = ctran::gpuGraphOwn(graph, held.get(), &graphGone);
  if (owned != gpuSuccess) {
    step->release();
    ctran::throwGpuError(owned, "gpuGraphOwn",
                         ctran::strCat(what_, ": handing the capturing graph its staging"));
  }
  held.release();  // the graph's now
  proxy_.graphs_->steps.push_back(step);
  GraphStep* replayed = step.get();
  enqueue(slots, std::vector<uint64_t>(pieces_, 0), replayWords, [&] {
    CTRAN_GPU_CHECK(gpuLaunchHostFunc(stream, &HostProxy::replay, replayed),
                    "capturing the host node of ", what_);
  });
}

void HostProxy::replay(void* p) {
  auto* step = static_cast<GraphStep*>(p);
  HostProxy* proxy = step->proxy.load();
  if (proxy == nullptr) return;  // replayed after the communicator was destroyed: undefined
  try {
    GraphChannel& channel = *proxy->graphs_;
    std::lock_guard<std::mutex> lock(channel.mu);
    std::vector<QueuedPiece> queued;
    queued.reserve(step->pieces.size());
    for (GraphStep::Piece& piece : step->pieces) {
      const uint64_t epoch = ++piece.slot.epoch;
      // The step kernels run after this node and read the number with a system-scope acquire.
      __atomic_store_n(&piece.slot.words()->replay, epoch, __ATOMIC_RELEASE);
      queued.push_back({&piece.slot, epoch, &piece.hostPart, &piece.at});
    }
    proxy->queueHostParts(*channel.host, *channel.group, queued, step->prefixBytes);
  } catch (...) {
    // A failed call before this replay, a dead peer: the abort word ends the step kernels.
    proxy->fail(std::current_exception());
  }
}

void HostProxy::releaseGoneGraphs() {
  if (!graphs_ || !graphs_->anyGone->load(std::memory_order_relaxed)) return;
  {
    // After a failure, a replay's publish step may still be queued behind the kernel that the
    // abort ended: its memory stays until destroy.
    std::lock_guard<std::mutex> lock(failureMu_);
    if (failure_) return;
  }
  graphs_->anyGone->store(false);
  std::lock_guard<std::mutex> lock(graphs_->mu);
  auto& steps = graphs_->steps;
  for (auto it = steps.begin(); it != steps.end();) {
    if (!(*it)->gone.load()) {
      ++it;
      continue;
    }
    (*it)->release();
    it = steps.erase(it);
  }
}

void HostProxy::destroyGraphs(bool collective) {
  if (!graphs_) return;
  std::unique_ptr<GraphChannel> channel = std::move(graphs_);
  // As the communicator itself ends (Communicator::Impl::release): an abort fails the peers'
  // waits; after a failure nothing waits on them.
  if (!collective) channel->group->reportFailure(rank_, "its communicator was aborted");
  if (channel->group->failure()) collective = false;
  channel->host->stop();
  for (auto& step : channel->steps) {
    step->proxy.store(nullptr);
    step->release();
  }
  channel->host->destroy();
  if (collective) channel->group->closeBootstrap();
  channel->group->destroy();
}

}  // namespace rcclx::gpu
