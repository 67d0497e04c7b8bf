// The GPU side of DeviceRma (device_rma.hpp): a copy and the two one-thread kernels, enqueued
// on a stream. No GPU runtime types here (streams are void*), so host-only code includes it;
// only builds with GPU code define these functions (device_rma_kernels.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ctran/wait_report.hpp"

namespace ctran::device {

/// Enqueues a device-to-device copy of `bytes` from `src` to `dst` on `stream` (GPU `dev`).
void rmaCopy(int dev, void* dst, const void* src, size_t bytes, void* stream);

/// Enqueues: *sent += 1, then a system-scope fence and a release store of *sent into `slot` (a
/// peer's signal slot for this rank).
void rmaSignal(int dev, uint64_t* slot, uint64_t* sent, void* stream);

/// Enqueues: *expected += 1, then an acquire poll of `slot` until it reaches *expected, ended
/// by `bound` (at once once its abort word is set; past its timeout, recorded in its report;
/// `rank` and `peer` name the wait there).
void rmaWait(int dev, const uint64_t* slot, uint64_t* expected, int rank, int peer,
             const WaitBound& bound, void* stream);

}  // namespace ctran::device
