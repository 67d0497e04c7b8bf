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

void HostProxy::Call::capture(HostPart hostPart) {
  const gpuStream_t stream = static_cast<gpuStream_t>(stream_);
  void* graph = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuCaptureGraphOf(stream, &graph), "querying the capture of ", what_);
  CTRAN_CHECK(RCCLX_GPU_GRAPH_OWN && graph != nullptr, ctran::InvalidUsage, what_,
              ": the communicator spans hosts, and this build cannot hand a graph the staging "
              "of its calls (graph user objects need CUDA 11.3 or HIP 5.3); run this call "
              "eagerly");
  auto step = std::make_shared<GraphStep>();
  {
    // Pinned memory and the channel's connections are calls a capture in global mode refuses.
    ctran::GpuRelaxedCapture relaxed;
    GraphChannel& channel = proxy_.graphChannel();
    step->anyGone = channel.anyGone;
    step->slot.device = proxy_.device_;
    step->slot.reserve(layOut());
  }
  step->proxy.store(&proxy_);
  step->hostPart = std::move(hostPart);
  step->at = copiesIn(step->slot.staging());
  step->prefixBytes = prefixBytes_;
  auto held = std::make_unique<std::shared_ptr<GraphStep>>(step);
  const gpuError_t owned = ctran::gpuGraphOwn(graph, held.get(), &graphGone);
  if (owned != gpuSuccess) {
    step->slot.release();
    ctran::throwGpuError(owned, "gpuGraphOwn",
                         ctran::strCat(what_, ": handing the capturing graph its staging"));
  }
  held.release();  // the graph's now
  proxy_.graphs_->steps.push_back(step);
  GraphStep* replayed = step.get();
  enqueue(step->slot, 0, &step->slot.mappedWords()->replay, [&] {
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
    const uint64_t epoch = ++step->slot.epoch;
    // The step kernel runs after this node and reads the number with a system-scope acquire.
    __atomic_store_n(&step->slot.words()->replay, epoch, __ATOMIC_RELEASE);
    proxy->queueHostPart(*channel.host, *channel.group, step->slot, epoch, step->hostPart,
                         step->at, step->prefixBytes);
  } catch (...) {
    // A failed call before this replay, a dead peer: the abort word ends the step kernel.
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
    (*it)->slot.release();
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
    step->slot.release();
  }
  channel->host->destroy();
  if (collective) channel->group->closeBootstrap();
  channel->group->destroy();
}

}  // namespace rcclx::gpu
