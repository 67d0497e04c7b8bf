// CommConfig: how one communicator is set up. Read once, at creation: the environment knobs
// (docs/configuration.rst) overlaid with this communicator's hints; later changes to the
// environment affect communicators created afterwards only.
#pragma once

#include <map>
#include <string>

namespace rcclx {

struct CommConfig {
  /// The GPU whose buffers the communicator's device calls use (-1: host buffers only). Every
  /// rank passes one, or none.
  int device = -1;
  /// Knob values for this communicator only, overriding the environment: knob name -> value
  /// as it would be written in the environment, e.g. {"RCCLX_ALLREDUCE_ALGO", "dda_tree"}.
  /// The torchcomms backend's hints and the C ABI's ncclConfig_t fill this. An unknown name or
  /// a bad value fails the creation, naming it.
  std::map<std::string, std::string> hints;
};

}  // namespace rcclx
