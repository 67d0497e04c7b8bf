// Reading an ncclCollConfig_t: the per-call options of the nccl*Config collectives.
#pragma once

#include "nccl.h"
#include "rcclx/buffer.hpp"

namespace rcclx::nccl {

/// Applies what `config` asks of one call of `collective` ("all_reduce", "broadcast", ...) to
/// `opts`; NULL asks nothing. algSelection picks an all_reduce's algorithm (nccl.h says how it
/// reads); the other collectives have one algorithm each here, which a selection naming ring
/// or auto (or nothing this library has, with forceAlgSelection 0) leaves as it is. The CTA
/// counts, cluster size, CTA policy, profiler tag and vendor extensions are accepted and
/// ignored. Throws InvalidArgument, naming the field and its value, for a config not
/// initialised by NCCL_COLLCONFIG_INITIALIZER (magic, size) or a forced selection this library
/// cannot satisfy.
void applyCollConfig(const ncclCollConfig_t* config, const char* collective, CallOptions& opts);

}  // namespace rcclx::nccl
