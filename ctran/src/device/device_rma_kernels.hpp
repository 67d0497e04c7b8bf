// The GPU side of DeviceRma (device_rma.hpp): a copy and the two one-thread kernels, enqueued
// on a stream. No GPU runtime types here (streams are void*), so host-only code includes it;
// only builds with GPU code define these functions (device_rma_kernels.cu).
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

/// Enqueues one thread that, for each rank p with a count, in rank order: expected[p] +=
/// counts[p], then polls slots[p] (acquire) until it reaches expected[p]. Every poll is ended by
/// `bound` (at once once its abort word is set; past its timeout, recorded in its report with
/// this rank, p and the values).
void rmaWait(int dev, const RmaWaitList& list, const WaitBound& bound, void* stream);

}  // namespace ctran::device
