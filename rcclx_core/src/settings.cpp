// Implementation of settings.hpp.
#include "settings.hpp"

#include <algorithm>

#include "config.hpp"
#include "ctran/checks.hpp"
#include "device/allreduce/tuning.hpp"

namespace rcclx {

Settings Settings::read(const CommConfig& config) {
  declareKnobs();
  Settings s;
  s.hints = ctran::config::Overrides(config.hints.begin(), config.hints.end());
  // Hint names are knob names; accept them in any case.
  ctran::config::Overrides upper;
  for (const auto& [name, value] : s.hints) {
    std::string key = name;
    std::transform(key.begin(), key.end(), key.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    upper[key] = value;
  }
  s.hints = std::move(upper);
  ctran::config::checkOverrides(s.hints);
  const ctran::config::Overrides* h = &s.hints;

  s.p2pChunkBytes = static_cast<size_t>(knob::RCCLX_P2P_CHUNK_BYTES(h));
  s.p2pSlots = static_cast<int>(knob::RCCLX_P2P_SLOTS(h));
  s.ddaEnable = knob::RCCLX_DDA_ENABLE(h);
  s.deterministic = knob::RCCLX_DETERMINISTIC(h);
  s.ddaChunkBytes = static_cast<size_t>(knob::RCCLX_DDA_CHUNK_BYTES(h));
  CTRAN_CHECK(s.ddaChunkBytes >= 4096, ctran::InvalidArgument,
              "RCCLX_DDA_CHUNK_BYTES=", s.ddaChunkBytes, " must be at least 4096");
  s.ddaLargeChunkBytes = static_cast<size_t>(knob::RCCLX_DDA_LARGE_CHUNK_BYTES(h));
  CTRAN_CHECK(s.ddaLargeChunkBytes >= 4096, ctran::InvalidArgument,
              "RCCLX_DDA_LARGE_CHUNK_BYTES=", s.ddaLargeChunkBytes, " must be at least 4096");
  s.timeoutMs = ctran::config::getInt("RCCLX_TIMEOUT_MS", h);

  s.selector = selectorConfigFrom(h);
  s.lp = lp::lpConfigFrom(h);

  s.gpuFlatSlotBytes = static_cast<size_t>(knob::RCCLX_GPU_FLAT_SLOT_BYTES(h));
  s.gpuStagingBytes = static_cast<size_t>(knob::RCCLX_GPU_STAGING_BYTES(h));
  s.gpuLinesBytes = static_cast<size_t>(knob::RCCLX_GPU_LINES_BYTES(h));
  s.gpuChannelBytes = static_cast<size_t>(knob::RCCLX_GPU_CHANNEL_BYTES(h));
  s.a2avDynamicSlotBytes = static_cast<size_t>(knob::RCCLX_A2AV_DYNAMIC_SLOT_BYTES(h));
  CTRAN_CHECK(s.a2avDynamicSlotBytes >= 16 && s.a2avDynamicSlotBytes % 16 == 0,
              ctran::InvalidArgument, "RCCLX_A2AV_DYNAMIC_SLOT_BYTES=", s.a2avDynamicSlotBytes,
              " must be a positive multiple of 16");
  s.gpuTuning = knob::RCCLX_GPU_TUNING(h);
  gpu::Tuning().apply(s.gpuTuning);  // a bad spec fails here, on every rank alike
  s.gpuGraphRegister = knob::RCCLX_GPU_GRAPH_REGISTER(h);
  s.stagedBytesInFlight = static_cast<size_t>(knob::RCCLX_STAGED_BYTES_IN_FLIGHT(h));
  s.stagedChunkBytes = static_cast<size_t>(knob::RCCLX_STAGED_CHUNK_BYTES(h));
  s.lpGpuStagingBytes = static_cast<size_t>(knob::RCCLX_LP_GPU_STAGING_BYTES(h));
  s.lpGpuBlocks = static_cast<int>(knob::RCCLX_LP_GPU_BLOCKS(h));
  s.lpGpuChunkBlocks =
      static_cast<size_t>(std::max<int64_t>(1, knob::RCCLX_LP_GPU_CHUNK_BLOCKS(h)));
  return s;
}

}  // namespace rcclx
