// Element-wise reduction kernels on host memory, for every datatype and operator.
//
// The 16- and 8-bit floating types are widened to float, combined, and rounded once per call:
// reduceMany() over N sources rounds once, so its result depends only on the sources and
// their order (the caller fixes the order; every rank then computes the same bits).
#pragma once

#include <cstddef>

#include "rcclx/types.hpp"

namespace rcclx::cpu {

/// dst[i] = op(a[i], b[i]). `dst` may alias `a` or `b`. AVG and PREMUL_SUM combine as SUM.
void reduce2(void* dst, const void* a, const void* b, size_t count, DataType type, RedOp op);

/// dst[i] = op(srcs[0][i], srcs[1][i], ...) combined left to right. `dst` may alias srcs[0].
void reduceMany(void* dst, const void* const* srcs, int numSrcs, size_t count, DataType type,
                RedOp op);

/// dst[i] = src[i] * factor (floating types; integers multiply and truncate toward zero).
void scale(void* dst, const void* src, size_t count, DataType type, double factor);

/// dst[i] /= divisor (integer division for integer types): the final step of AVG.
void divide(void* dst, size_t count, DataType type, int divisor);

}  // namespace rcclx::cpu
