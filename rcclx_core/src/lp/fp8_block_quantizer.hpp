// Fp8BlockQuantizer: encodes fp32 / bf16 elements as one wire segment (lp_wire_format.hpp) and
// decodes segments back, on host memory. Element arithmetic: fp8_block_codec.hpp, shared with
// the GPU kernels, so both produce the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "rcclx/types.hpp"

namespace rcclx::lp {

class Fp8BlockQuantizer {
 public:
  /// `blockElems`: a multiple of 32 in [32, 4096] (checked: InvalidArgument otherwise).
  explicit Fp8BlockQuantizer(size_t blockElems);

  size_t blockElems() const { return blockElems_; }
  /// Bytes of the segment of `count` elements.
  size_t wireBytes(size_t count) const;

  /// Writes the segment of `count` elements of `src` (kFloat32 or kBfloat16) to `dst`
  /// (wireBytes(count) bytes, padding included).
  void encode(const void* src, DataType type, size_t count, void* dst) const;
  /// Decodes the segment at `src` (of `count` elements) into `dst` (kFloat32 or kBfloat16).
  /// `dst` may alias the source elements the segment was encoded from, but not the segment.
  void decode(const void* src, size_t count, void* dst, DataType type) const;
  /// acc[i] = decoded[i] when `first`, else acc[i] += decoded[i] (one float32 rounding).
  void decodeAdd(const void* src, size_t count, float* acc, bool first) const;

 private:
  size_t blockElems_;
};

/// Throws InvalidArgument naming `what` unless `type` is kFloat32 or kBfloat16.
void checkLpType(DataType type, const char* what);

}  // namespace rcclx::lp
