// Reading an ncclConfig_t of any NCCL version by its own size / magic / version fields.
#pragma once

#include <string>

#include "nccl.h"

namespace rcclx::nccl {

/// What RCCLX takes from an ncclConfig_t.
struct CommOptions {
  bool blocking = true;
  std::string name;  ///< commName, "" when unset
};

/// The options `config` sets over `base` (NULL: `base` unchanged). Reads only the fields that
/// lie within config->size, so NCCL 2.27's 72-byte struct, 2.28's 80-byte one, 2.29-2.31's
/// 112-byte one, older shorter ones and newer longer ones all work. Throws InvalidArgument,
/// naming the field and its value, for a bad magic, a size smaller than the oldest ncclConfig_t
/// (NCCL 2.14's 40 bytes) or implausibly large, a version older than 2.14, or a blocking value
/// other than 0 / 1.
CommOptions readConfig(const ncclConfig_t* config, const CommOptions& base = {});

}  // namespace rcclx::nccl
