// The GPU side of DeviceRma (device_rma.hpp): a copy, a copy that signals when it is done, and
// the two one-thread kernels, enqueued on a stream. No GPU runtime types here (streams are void*),
// so host-only code includes it; only builds with GPU code define these functions
// (device_rma_kernels.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/device_window.hpp"
#include "ctran/wait_report.hpp"

namespace ctran::device {

/// What one wait kernel waits for: counts[p] more signals from each rank p in slots[p] (this
/// rank's signal slots), counted in expected[p] (this rank's counters, device memory).
struct RmaWaitList {
  const uint64_t* slots = nullptr;
  uint64_t* expected = nullptr;
  uint64_t counts[kMaxDeviceRanks] = {};
  int rank = 0;  ///< this rank, for the timeout report
  int nranks = 0;
};

/// Enqueues a device-to-device copy of `bytes` from `src` to `dst` on `stream` (GPU `dev`).
void rmaCopy(int dev, void* dst, const void* src, size_t bytes, void* stream);

/// Enqueues: *sent += 1, then a system-scope fence and a release store of *sent into `slot` (a
/// peer's signal slot for this rank).
void rmaSignal(int dev, uint64_t* slot, uint64_t* sent, void* stream);

/// A put's signal: the counter it advances, the slot it releases, and the word its blocks count
/// their arrivals in (device memory, 0 between kernels).
struct RmaSignalTarget {
  uint64_t* slot = nullptr;  ///< the peer's signal slot for this rank
  uint64_t* sent = nullptr;  ///< this rank's count of signals sent to the peer
  unsigned* arrivals = nullptr;
};

/// Enqueues one kernel that copies `bytes` from `src` to `dst` (device memory, this GPU's or
/// mapped) and then signals as rmaSignal does: with several blocks each fences its stores at
/// system scope and counts itself in `target.arrivals`, and the last to arrive resets the count;
/// that block (or the only one, after its barrier) advances `*target.sent` and releases it into
/// `target.slot`. One launch instead of a copy and a signal kernel.
void rmaPutSignal(int dev, void* dst, const void* src, size_t bytes, const RmaSignalTarget& target,
                  void* stream);

/// Enqueues one thread that, for each rank p with a count, in rank order: expected[p] +=
/// counts[p], then polls slots[p] (acquire) until it reaches expected[p]. Every poll is ended by
/// `bound` (at once once its abort word is set; past its timeout, recorded in its report with
/// this rank, p and the values).
void rmaWait(int dev, const RmaWaitList& list, const WaitBound& bound, void* stream);

}  // namespace ctran::device
