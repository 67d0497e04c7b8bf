// The knobs the library reads, for tools and foreign APIs (NCCL's parameter calls).
#pragma once

#include <vector>

#include "ctran/config.hpp"

namespace rcclx {

/// Every knob of ctran and rcclx_core, in declaration order, each with its effective value
/// (the environment's, else the default) as of this call.
std::vector<ctran::KnobValue> knobs();

}  // namespace rcclx
