// rcclx_core's knobs, declared in knobs.def and registered in ctran's one knob registry.
#pragma once

#include "ctran/config.hpp"

namespace rcclx {

/// Adds rcclx_core's knobs to the registry (idempotent; accessors call it themselves).
void declareKnobs();

/// Typed accessors: rcclx::knob::RCCLX_ALLREDUCE_ALGO() and so on.
namespace knob {
#define RCCLX_KNOB(NAME, TYPE, DEFAULT, CHOICES, DESCRIPTION) \
  inline auto NAME() {                                        \
    declareKnobs();                                           \
    return ::ctran::config::get##TYPE(#NAME);                 \
  }
#include "knobs.def"
#undef RCCLX_KNOB
}  // namespace knob

}  // namespace rcclx
