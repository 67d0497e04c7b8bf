// rcclx_core's knobs, declared in knobs.def and registered in ctran's one knob registry.
#pragma once

#include "ctran/config.hpp"

namespace rcclx {

/// Adds rcclx_core's knobs to the registry (idempotent; accessors call it themselves).
void declareKnobs();

/// Typed accessors: rcclx::knob::RCCLX_ALLREDUCE_ALGO(hints) and so on (hints: a
/// communicator's overrides, or null for the environment alone). Read at communicator
/// creation (settings.hpp), not per call.
namespace knob {
#define RCCLX_KNOB(NAME, TYPE, DEFAULT, CHOICES, DESCRIPTION)           \
  inline auto NAME(const ::ctran::config::Overrides* hints = nullptr) { \
    declareKnobs();                                                     \
    return ::ctran::config::get##TYPE(#NAME, hints);                    \
  }
#include "knobs.def"
#undef RCCLX_KNOB
}  // namespace knob

}  // namespace rcclx
