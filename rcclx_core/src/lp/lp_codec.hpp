// The host reference of the low-precision wire format (FP8 e4m3 codes with a float32 scale per
// block; layout and rules in docs/low_precision.rst): for tools and tests, and the bytes the GPU
// kernels must reproduce.
#pragma once

#include <cstddef>

#include "rcclx/types.hpp"

namespace rcclx::lp {

/// Bytes of the wire segment of `count` elements in blocks of `blockElems`.
size_t lpWireBytes(size_t count, size_t blockElems);

/// Encodes `count` elements of `src` (kFloat32 or kBfloat16) as one wire segment at `dst`
/// (lpWireBytes(count, blockElems) bytes). Throws InvalidArgument for another type or a block
/// size that is not a multiple of 32 in [32, 4096].
void lpEncode(const void* src, DataType type, size_t count, size_t blockElems, void* dst);

/// Decodes the wire segment at `src` (of `count` elements) into `dst` (kFloat32 or kBfloat16).
void lpDecode(const void* src, size_t count, size_t blockElems, void* dst, DataType type);

}  // namespace rcclx::lp
