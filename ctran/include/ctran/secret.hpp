// The per-job secret every TCP connection of a job presents (see src/handshake.hpp).
//
// It authenticates: a process that does not know it cannot join the job's store or open a
// transport connection to its ranks. It does not encrypt: it crosses the network in the clear,
// and so does everything after it.
#pragma once

#include <array>
#include <cstdint>

namespace ctran {

/// 128 random bits shared by the processes of one job. All zeros is "no secret": connections
/// then check only the protocol's magic and version.
struct JobSecret {
  static constexpr size_t kBytes = 16;
  std::array<uint8_t, kBytes> bytes{};

  /// A fresh secret from the kernel's random source.
  static JobSecret random();
  /// RCCLX_JOB_SECRET (32 hex digits) when set, else no secret; throws InvalidArgument when the
  /// value is malformed (the message never repeats the value).
  static JobSecret fromKnob();
  bool empty() const;
  /// Constant-time comparison (the time a refusal takes says nothing about the secret).
  bool matches(const JobSecret& other) const;
};

}  // namespace ctran
