// Bounded in-kernel waits, as the host sees them: the bound a kernel's waits get (WaitBound),
// what the first wait that ran out of time leaves for the host (WaitReport), and the pinned
// host memory, mapped into the GPU, that holds such a report (MappedWaitReport). The device
// side of the waits is signal_device.cuh's.
//
// Whoever launches kernels that wait on peers owns one report and watches it: a communicator
// (rcclx_core's FailureWatch), a GPU window (DeviceRma). A wait that runs out records itself
// there and sets the abort word instead of trapping, so the kernel ends, the GPU context stays
// usable (under MPS a trap would put the whole server into fault recovery) and the owner's next
// call raises a TimeoutError built from the report.
#pragma once

#include <cstdint>

namespace ctran {

/// What the first in-kernel wait that ran out of time leaves for the host: pinned host memory
/// mapped into the device, which the host polls. The wait claims it (`claimed`, so one wait
/// reports), fills it in, then publishes `timedOut` and sets `abort`, so every other wait bound
/// by it ends too and the host turns the report into its owner's error.
struct WaitReport {
  uint32_t abort = 0;     ///< the abort word (WaitBound::abort points here); host or kernel sets it
  uint32_t claimed = 0;   ///< taken by the first wait that ran out
  uint32_t timedOut = 0;  ///< set last: the fields below are complete
  int32_t rank = -1;      ///< the waiting rank
  int32_t peer = -1;      ///< the rank it waited for
  uint32_t what = 0;      ///< what it waited for (WaitSubject)
  uint64_t expected = 0;  ///< the flag value it waited for
  uint64_t seen = 0;      ///< the value it last saw
  uint64_t timeoutNs = 0;  ///< the bound it ran out of (waits of one owner may differ)
};

/// What a wait waits for, as a WaitReport names it.
enum class WaitSubject : uint32_t { kSignal = 1, kLine = 2, kLlLine = 3 };

/// How long a kernel's waits may last. Once `*abort` is nonzero (mapped host memory, set by
/// the host when its group failed, or by a kernel's wait that ran out) every wait ends at once
/// and the kernel runs to its end without waiting, its outputs undefined, so a dead or stopped
/// peer never holds a GPU. Past `timeoutNs` a wait prints what it waited for and, with a
/// `report`, records it there and sets the abort word (the kernel ends, the GPU stays usable,
/// the host raises the timeout); without one (nobody watches) it traps, so the launch fails.
/// Every kernel of the libraries is handed a report (MappedWaitReport::bound).
struct WaitBound {
  uint64_t timeoutNs = 0;
  const uint32_t* abort = nullptr;
  WaitReport* report = nullptr;
};

/// A WaitReport in pinned host memory mapped into one GPU's address space: kernels' waits write
/// it through bound(), the host reads it without a copy or a synchronisation. Free it (destroy
/// the object) only once no kernel handed its bound still runs.
class MappedWaitReport {
 public:
  /// Allocates the report (no abort, no timeout) for GPU `device`; `owner` names it in errors
  /// ("the wait report of a GPU window"). Throws CudaError when the runtime fails, or in a
  /// build without GPU code.
  MappedWaitReport(int device, const char* owner);
  /// Frees the report; a failure is logged.
  ~MappedWaitReport();
  MappedWaitReport(const MappedWaitReport&) = delete;
  MappedWaitReport& operator=(const MappedWaitReport&) = delete;

  /// The bound for kernels' waits: `timeoutNs`, this report's abort word and the report, as
  /// the device addresses them.
  WaitBound bound(uint64_t timeoutNs) const;
  /// Sets the abort word: every wait bound by it ends at once (now, or as soon as it starts).
  /// Idempotent.
  void abort();
  /// True once a wait ran out of time and published its report (whose fields are then
  /// complete: report()). An atomic load of host memory: cheap enough for every call.
  bool timedOut() const;
  /// The report as the host reads it; read its fields only once timedOut().
  const WaitReport& report() const { return *host_; }

 private:
  WaitReport* host_ = nullptr;
  WaitReport* device_ = nullptr;
};

}  // namespace ctran
