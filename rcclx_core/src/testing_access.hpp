// Hooks for tests and tuning tools into a Communicator's internals (the selector's choice,
// zero-copy counters, the GPU launch shapes). Not part of the public API: rcclx_core's Python
// module exposes them as rcclx_core._testing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "rcclx/communicator.hpp"
#include "selector.hpp"

namespace rcclx {

struct CommunicatorTesting {
  /// The selector's choice for an allreduce of `bytes` (`algo` as CallOptions::algo) and why.
  static std::pair<AllReduceAlgo, std::string> selectAllReduce(const Communicator& comm,
                                                               size_t bytes, DataType type,
                                                               RedOp op, const std::string& algo,
                                                               bool gpu);
  /// The host back-end's choice for `collective` ("all_gather", "reduce_scatter", "broadcast",
  /// "reduce") of `bytes` (estimateCost()'s count) rooted at `root`, and why.
  static std::pair<std::string, std::string> selectCollective(const Communicator& comm,
                                                              const std::string& collective,
                                                              size_t bytes, int root);
  /// GPU allreduce calls that stored their all-gather straight into the peers' outputs.
  static uint64_t symmetricCalls(const Communicator& comm);
  /// Outputs of captured GPU allreduces mapped for graphs still alive.
  static size_t graphRegistrations(Communicator& comm);
  /// Replaces the GPU allreduce kernels' launch shapes (RCCLX_GPU_TUNING syntax).
  static void setGpuTuning(Communicator& comm, const std::string& spec);
  /// How the ranks share GPUs and what that does to launches ("" without a device).
  static std::string gpuSharing(const Communicator& comm);
};

}  // namespace rcclx
