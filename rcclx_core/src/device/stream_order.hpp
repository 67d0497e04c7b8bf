// StreamOrder: the operations of one communicator run on the GPU in the order they were
// issued, whichever streams the callers use (as NCCL's do). Kernels of two calls that overlap
// would share the communicator's staging and flags; and ranks must run them in one order.
#pragma once

#include "ctran/gpu_runtime.hpp"

namespace rcclx::gpu {

class StreamOrder {
 public:
  StreamOrder() = default;
  ~StreamOrder();
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;

  /// Called before enqueueing an operation on `stream`: when the previous operation went to
  /// another stream, `stream` first waits for everything enqueued there so far. Nothing is
  /// added while either stream is being captured into a graph (a capture orders its own work;
  /// an eager stream's event cannot be waited on inside one), nor when the previous stream no
  /// longer exists.
  void enter(void* stream);

 private:
  gpuEvent_t event_ = nullptr;  ///< created on the first change of stream
  void* last_ = nullptr;
  bool any_ = false;  ///< whether an operation was enqueued yet (nullptr is a stream too)
};

}  // namespace rcclx::gpu
