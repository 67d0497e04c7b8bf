// Implementation of graph_registration.hpp.
#include "device/graph_registration.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "ctran/checks.hpp"
#include "ctran/gpu_runtime.hpp"
#include "ctran/logging.hpp"
#include "device/allreduce/launch.hpp"

namespace rcclx::gpu {

struct GraphRegistrations::Shared {
  std::mutex mutex;
  uint64_t nextId = 0;
  std::map<uint64_t, std::unique_ptr<ctran::DeviceWindow>> windows;  ///< by registration
  std::vector<uint64_t> released;        ///< registrations whose graph is gone, not yet closed
  std::atomic<bool> anyReleased{false};  ///< released is not empty (read without the lock)
};

namespace {

/// What a graph owns: its registration's id, and where to report its release.
struct GraphOwned {
  std::shared_ptr<GraphRegistrations::Shared> shared;
  uint64_t id;
};

}  // namespace

GraphRegistrations::GraphRegistrations(ctran::PeerGroup& group, int device)
    : group_(&group), device_(device), shared_(std::make_shared<Shared>()) {}

GraphRegistrations::~GraphRegistrations() {
  try {
    destroy();
  } catch (const std::exception& e) {
    CTRAN_WARN("graph registrations: ", e.what());
  }
}

void* GraphRegistrations::captureGraph(void* stream) const {
#if RCCLX_GPU_GRAPH_OWN
  void* graph = nullptr;
  CTRAN_GPU_CHECK(ctran::gpuCaptureGraphOf(static_cast<gpuStream_t>(stream), &graph),
                  "all_reduce: querying the stream's capture");
  return graph;
#else
  (void)stream;
  return nullptr;  // no graph user objects (HIP before 5.3): never registers
#endif
}

bool GraphRegistrations::mapCapturedOutput(void* recv, size_t bytes, void* stream,
                                           char* (&peerRecv)[ctran::kMaxDeviceRanks]) {
  void* graph = captureGraph(stream);
  if (graph == nullptr) return false;
  // Mapping memory and exporting handles are calls a capture in global mode refuses.
  ctran::GpuRelaxedCapture relaxed;
  std::unique_ptr<ctran::DeviceWindow> window;
  try {
    window = std::make_unique<ctran::DeviceWindow>(*group_, device_,
                                                   ctran::DeviceWindow::UserMemory{recv, bytes});
  } catch (const ctran::InvalidArgument& e) {  // every rank failed alike: all stay staged
    CTRAN_INFO("all_reduce captured staged: its output cannot be mapped (", e.what(), ")");
    return false;
  } catch (const ctran::CudaError& e) {  // likewise; a peer that never comes times out instead
    CTRAN_WARN("all_reduce captured staged: mapping the outputs failed (", e.what(), ")");
    return false;
  }
  const ctran::DeviceWindowHandle& h = window->handle();
  if (!outputsAlike(h.data, h.nranks)) {
    window->destroy(false);
    CTRAN_INFO("all_reduce captured staged: the ranks' outputs differ modulo 16 bytes");
    return false;
  }
  for (int r = 0; r < h.nranks; ++r) peerRecv[r] = h.data[r];
  uint64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    id = shared_->nextId++;
    shared_->windows.emplace(id, std::move(window));
  }
  auto owned = std::make_unique<GraphOwned>(GraphOwned{shared_, id});
  auto release = [](void* payload) {
    std::unique_ptr<GraphOwned> mine(static_cast<GraphOwned*>(payload));
    std::lock_guard<std::mutex> lock(mine->shared->mutex);
    mine->shared->released.push_back(mine->id);
    mine->shared->anyReleased = true;
  };
  const gpuError_t err = ctran::gpuGraphOwn(graph, owned.get(), release);
  if (err != gpuSuccess) {
    {
      std::lock_guard<std::mutex> lock(shared_->mutex);
      window = std::move(shared_->windows[id]);
      shared_->windows.erase(id);
    }
    window->destroy(false);
    ctran::throwGpuError(err, "gpuGraphOwn",
                         "all_reduce: handing the capturing graph its mappings");
  }
  owned.release();  // the graph's now
  return true;
}

void GraphRegistrations::closeReleased() {
  if (!shared_->anyReleased.load()) return;  // the common case: one atomic load
  std::vector<std::unique_ptr<ctran::DeviceWindow>> closing;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->anyReleased = false;
    for (uint64_t id : shared_->released) {
      auto it = shared_->windows.find(id);
      if (it == shared_->windows.end()) continue;  // closed by destroy() already
      closing.push_back(std::move(it->second));
      shared_->windows.erase(it);
    }
    shared_->released.clear();
  }
  for (auto& w : closing) w->destroy(false);  // no kernel uses it: its graph is gone
}

size_t GraphRegistrations::held() {
  closeReleased();
  std::lock_guard<std::mutex> lock(shared_->mutex);
  return shared_->windows.size();
}

void GraphRegistrations::destroy() {
  std::map<uint64_t, std::unique_ptr<ctran::DeviceWindow>> closing;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    closing.swap(shared_->windows);
    shared_->released.clear();
    shared_->anyReleased = false;
  }
  for (auto& [id, w] : closing) w->destroy(false);
}

}  // namespace rcclx::gpu
