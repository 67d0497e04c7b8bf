// Settings: one communicator's configuration, read and validated once at creation from the
// environment knobs overlaid with its CommConfig hints. The hot path reads these plain fields;
// nothing per call touches the knob registry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ctran/config.hpp"
#include "lp/lp_policy.hpp"
#include "rcclx/comm_config.hpp"
#include "selector.hpp"

namespace rcclx {

struct Settings {
  ctran::config::Overrides hints;  ///< kept so split() builds children alike

  // Host transport and the DDA staging.
  size_t p2pChunkBytes = 0;
  int p2pSlots = 0;
  bool ddaEnable = true;
  bool deterministic = true;      ///< RCCLX_DETERMINISTIC: host reductions in the fold order
  size_t ddaChunkBytes = 0;       ///< RCCLX_DDA_CHUNK_BYTES: dda_flat's and dda_tree's step
  size_t ddaLargeChunkBytes = 0;  ///< RCCLX_DDA_LARGE_CHUNK_BYTES: dda_large's step
  int64_t timeoutMs = 0;          ///< RCCLX_TIMEOUT_MS

  SelectorConfig selector;  ///< RCCLX_ALLREDUCE_ALGO and the thresholds
  lp::LpConfig lp;          ///< RCCL_LOW_PRECISION_* and RCCLX_LP_*

  // GPU buffers (used when the communicator has a device).
  size_t gpuFlatSlotBytes = 0;
  size_t gpuStagingBytes = 0;
  size_t gpuLinesBytes = 0;
  size_t gpuChannelBytes = 0;
  size_t a2avDynamicSlotBytes = 0;  ///< RCCLX_A2AV_DYNAMIC_SLOT_BYTES, checked
  std::string gpuTuning;            ///< RCCLX_GPU_TUNING, checked
  bool gpuGraphRegister = true;
  size_t stagedBytesInFlight = 0;  ///< RCCLX_STAGED_BYTES_IN_FLIGHT: the host proxy's staging
  size_t stagedChunkBytes = 0;     ///< RCCLX_STAGED_CHUNK_BYTES: the pieces of a large call
  size_t lpGpuStagingBytes = 0;
  int lpGpuBlocks = 0;
  size_t lpGpuChunkBlocks = 0;

  /// Reads every knob (hints first, then the environment, then the defaults) and checks them;
  /// throws InvalidArgument naming the knob and value on the first bad one.
  static Settings read(const CommConfig& config);
};

}  // namespace rcclx
