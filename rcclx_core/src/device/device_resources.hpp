// DeviceResources: the one owner of a communicator's GPU state: the device windows the kernels
// stage through (one per use: the allreduce staging, the collectives' channels, the
// low-precision staging, alltoallv_dynamic's slots), the symmetric buffers, the signals of the
// one-sided calls, the graph registrations of captured outputs and the allreduce launch shapes. The
// algorithms (GpuAllReduce, GpuCollectives, GpuLowPrecision) borrow from it; destroy() releases
// everything in one place and one order. Compiled in builds with GPU code only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctran/device_rma.hpp"
#include "ctran/device_window.hpp"
#include "device/allreduce/tuning.hpp"
#include "device/co_residency.hpp"
#include "device/failure_watch.hpp"
#include "device/graph_registration.hpp"
#include "settings.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx::gpu {

/// What a device window stages.
enum class Staging : int { kAllReduce = 0, kChannels, kLowPrecision, kAllToAllvDynamic };
constexpr int kNumStagings = 4;

class DeviceResources {
 public:
  /// Collective over `group` (every rank on one host): how the ranks share GPUs, the graph
  /// registrations (when RCCLX_GPU_GRAPH_REGISTER is on) and the launch shapes of `settings`;
  /// windows come on demand.
  DeviceResources(ctran::PeerGroup& group, int device, const Settings& settings);
  ~DeviceResources();
  DeviceResources(const DeviceResources&) = delete;
  DeviceResources& operator=(const DeviceResources&) = delete;

  ctran::PeerGroup& group() const { return *group_; }
  int device() const { return device_; }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  /// The bound of every in-kernel wait: RCCLX_TIMEOUT_MS, and the abort word a failure of
  /// the group sets (see failure_watch.hpp).
  ctran::WaitBound waitBound() const { return bound_; }
  /// The GPU has programmatic dependent launch (sm_90 and later, NVIDIA).
  bool pdlCapable() const { return pdlCapable_; }
  /// The line kernels run here: whole-line arrival is an NVLink property (NVIDIA builds).
  bool linesAvailable() const { return linesAvailable_; }
  /// How the group's ranks share GPUs, agreed by all of them: the bound on every launch of a
  /// kernel that waits on peers.
  const CoResidency& coResidency() const { return coResidency_; }

  /// Collective: the window staging `which` (`bytes` of data, `signals` signals per rank),
  /// made on the first ask; the same window afterwards. Throws InvalidUsage after destroy().
  ctran::DeviceWindow& staging(Staging which, size_t bytes, int signals, const char* what);
  /// Whether `which` has its window (asked for and not released).
  bool hasStaging(Staging which) const { return windows_[static_cast<int>(which)] != nullptr; }

  /// Device memory of at least `bytes` for a call's temporary copy (an in-place all_to_all's
  /// input), kept and grown across calls. Growing allocates, which a graph capture cannot: then
  /// InvalidUsage naming `what` and the size (one such call before capturing makes it).
  void* scratch(size_t bytes, void* stream, const char* what);

  /// Symmetric buffers (see Communicator::allocSymmetric and its neighbours).
  void* allocSymmetric(size_t bytes);
  void registerSymmetric(void* ptr, size_t bytes);
  void freeSymmetric(void* ptr);
  /// The symmetric buffer that starts at `ptr` (as allocSymmetric returned it or
  /// registerSymmetric took it), for puts into the peers'; InvalidArgument naming `what` when
  /// none does.
  const ctran::DeviceWindow& symmetricWindow(const void* ptr, const char* what) const;

  /// Collective on the first call: the one-sided calls' signals (a DeviceRma of signals only,
  /// its puts going into the symmetric buffers); later calls do nothing.
  void openSignals();
  /// The signals once opened; InvalidUsage naming `what` before, or after destroy().
  ctran::DeviceRma& signals(const char* what);
  /// RCCLX_TIMEOUT_MS of the communicator: the bound of the one-sided calls' waits.
  int64_t timeoutMs() const { return timeoutMs_; }

  /// When [out, out + bytes) lies in one symmetric buffer and every rank's output at that
  /// offset sits alike modulo 16 bytes: fills peerOut[r] with rank r's output (as mapped
  /// here) and returns true.
  bool symmetricOutputs(const void* out, size_t bytes, char** peerOut) const;

  /// Outputs mapped while captured (null when RCCLX_GPU_GRAPH_REGISTER is off).
  GraphRegistrations* graphOutputs() { return graphOutputs_.get(); }
  const GraphRegistrations* graphOutputs() const { return graphOutputs_.get(); }

  const Tuning& tuning() const { return tuning_; }
  /// Replaces the launch shapes (applied to the defaults); for tuning tools.
  void setTuning(const std::string& spec);

  /// See DeviceBackend::reportKernelTimeout.
  void reportKernelTimeout() { watch_->reportKernelTimeout(); }

  /// Device memory this communicator allocated for itself on this rank: its staging windows and
  /// scratch (not the symmetric buffers it handed out, which are the caller's).
  size_t allocatedBytes() const;

  bool released() const { return released_; }
  /// Releases the symmetric buffers, then the windows, then (after the windows' destroy waited
  /// for this GPU) the graph registrations; collective unless `collective` is false (abort,
  /// which first ends every kernel's waits).
  void destroy(bool collective);

 private:
  /// Collective: the sizes every rank passed to alloc / register (`what`) agree, and no rank
  /// reported a `problem` ("" for none); else InvalidArgument on every rank.
  void agreeOnSymmetric(const char* what, size_t bytes, const std::string& problem) const;

  ctran::PeerGroup* group_;
  int device_;
  int rank_;
  int nranks_;
  std::unique_ptr<FailureWatch> watch_;
  ctran::WaitBound bound_;
  bool pdlCapable_ = false;
  bool linesAvailable_ = false;
  CoResidency coResidency_;
  bool released_ = false;
  std::unique_ptr<ctran::DeviceWindow> windows_[kNumStagings];
  std::vector<std::unique_ptr<ctran::DeviceWindow>> symmetric_;
  std::unique_ptr<ctran::DeviceRma> signals_;  ///< opened by the first one-sided user
  int64_t timeoutMs_ = 0;
  std::unique_ptr<GraphRegistrations> graphOutputs_;
  Tuning tuning_;
  void* scratch_ = nullptr;
  size_t scratchBytes_ = 0;
};

}  // namespace rcclx::gpu
