// What ucx transports tell each other about a window through the bootstrap when it is created:
// its data's address and remote key. Little-endian fields with lengths, checked on decode: a short
// or inconsistent blob is a RemoteError naming the rank that sent it, never a read past its end.
#pragma once

#include <cstdint>

#include "ctran/store.hpp"

namespace ctran::ucx {

/// A window as its owner exports it.
struct WindowWire {
  uint64_t dataAddress = 0;
  uint64_t dataBytes = 0;
  uint64_t numSignals = 0;
  Bytes dataKey;  ///< packed remote key of the data
  Bytes encode() const;
  /// Parses `rank`'s handle; throws RemoteError when it is malformed.
  static WindowWire decode(const Bytes& blob, int rank);
};

}  // namespace ctran::ucx
