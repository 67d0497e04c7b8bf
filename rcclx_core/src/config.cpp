// Registration of rcclx_core's knob table.
#include "config.hpp"

#include "rcclx/knobs.hpp"

namespace rcclx {
namespace {

const ctran::KnobSpec kKnobs[] = {
#define RCCLX_KNOB(NAME, TYPE, DEFAULT, CHOICES, DESCRIPTION) \
  {#NAME, ctran::KnobType::k##TYPE, DEFAULT, CHOICES, DESCRIPTION},
#include "knobs.def"
#undef RCCLX_KNOB
};

}  // namespace

void declareKnobs() {
  static const bool declared = [] {
    ctran::config::declare(kKnobs, sizeof(kKnobs) / sizeof(kKnobs[0]));
    return true;
  }();
  (void)declared;
}

std::vector<ctran::KnobValue> knobs() {
  declareKnobs();
  return ctran::config::dump();
}

}  // namespace rcclx
