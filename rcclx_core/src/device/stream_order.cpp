#include "device/stream_order.hpp"

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"

namespace rcclx::gpu {

StreamOrder::~StreamOrder() {
  if (event_ != nullptr) (void)gpuEventDestroy(event_);
}

void StreamOrder::enter(void* stream) {
  const bool changed = any_ && stream != last_;
  void* previous = last_;
  last_ = stream;
  any_ = true;
  if (!changed) return;
  auto* from = static_cast<gpuStream_t>(previous);
  auto* to = static_cast<gpuStream_t>(stream);
  if (ctran::gpuStreamCapturing(from) || ctran::gpuStreamCapturing(to)) return;
  if (event_ == nullptr) {
    CTRAN_GPU_CHECK(gpuEventCreateWithFlags(&event_, gpuEventDisableTiming),
                    "ordering a communicator's streams: creating an event");
  }
  if (gpuEventRecord(event_, from) != gpuSuccess) {
    (void)gpuGetLastError();  // the previous stream was destroyed: nothing left to wait for
    CTRAN_TRACE("stream order: the previous stream is gone; not waiting for it");
    return;
  }
  CTRAN_GPU_CHECK(gpuStreamWaitEvent(to, event_, 0),
                  "ordering a communicator's streams: waiting for the previous stream");
}

}  // namespace rcclx::gpu
