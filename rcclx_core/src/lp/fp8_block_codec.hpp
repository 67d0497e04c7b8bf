// The arithmetic of the FP8 block quantizer, element by element, as inline functions that
// compile for the host and (under nvcc / hipcc) for the device, so the CPU and GPU paths
// produce the same bytes. Layout of the result: lp_wire_format.hpp.
//
// Rules (also in docs/low_precision.rst):
// - Scale: a power of two 2^k, the smallest with amax <= 448 * 2^k, amax being the largest |x|
//   over the block's finite elements; k is clamped to >= -126 (so the scale and its inverse are
//   normal floats) and a block with amax == 0 gets k = 0. Multiplying by 2^-k is exact, so
//   encoding rounds once (x * 2^-k to e4m3, round-to-nearest-even) and decoding (e4m3 * 2^k)
//   is exact: no division, no fused or reordered arithmetic can change a bit.
// - Saturation: never needed for finite values (|x| * 2^-k <= 448 by the choice of k).
// - NaN and +-inf: each becomes an e4m3 NaN code carrying the element's sign; the block's scale
//   is computed from its finite elements only. If the block holds an infinity and no NaN, its
//   scale word is negated and its NaN codes decode back to +-inf; otherwise they decode to NaN.
// - Decoding overflows only for |x| within 1/32 of FLT_MAX (its rounding up gives 2^128 = inf).
// - Device code must not flush subnormals in the encoder's input (no -ftz for these kernels);
//   results below 2^-126 then decode identically too.
#pragma once

#include <cstdint>
#include <cstring>

#include "lp/lp_wire_format.hpp"

namespace rcclx::lp {

/// Largest finite e4m3 magnitude.
constexpr float kE4m3Max = 448.0f;
/// Range of the scale exponent k.
constexpr int kMinScaleExp = -126;
constexpr int kMaxScaleExp = 120;

RCCLX_LP_HOST_DEVICE inline uint32_t bitsOf(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

RCCLX_LP_HOST_DEVICE inline float floatOf(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

/// 2^k for kMinScaleExp <= k <= 127, built exactly from its bits.
RCCLX_LP_HOST_DEVICE inline float pow2(int k) {
  return floatOf(static_cast<uint32_t>(k + 127) << 23);
}

/// What the encoder needs to know about a block: the bits of its largest finite |x| (an
/// unsigned compare of |x|'s bits orders them as the values) and whether it holds NaN or inf.
struct BlockStats {
  uint32_t amaxBits = 0;
  bool hasNan = false;
  bool hasInf = false;

  /// Folds in one element.
  RCCLX_LP_HOST_DEVICE void add(float x) {
    uint32_t a = bitsOf(x) & 0x7fffffffu;
    hasNan |= a > 0x7f800000u;
    hasInf |= a == 0x7f800000u;
    uint32_t finite = a < 0x7f800000u ? a : 0u;
    amaxBits = finite > amaxBits ? finite : amaxBits;
  }
  /// Folds in another block part's statistics (for parallel reductions).
  RCCLX_LP_HOST_DEVICE void merge(const BlockStats& o) {
    amaxBits = o.amaxBits > amaxBits ? o.amaxBits : amaxBits;
    hasNan |= o.hasNan;
    hasInf |= o.hasInf;
  }
};

/// The block's scale exponent k: the smallest with amax <= 448 * 2^k, clamped to
/// [kMinScaleExp, kMaxScaleExp]; 0 for amax == 0. With amax = m * 2^e, m in [1, 2): k = e - 8
/// when m <= 1.75 (448 = 1.75 * 2^8), else e - 7.
RCCLX_LP_HOST_DEVICE inline int scaleExponent(uint32_t amaxBits) {
  if (amaxBits == 0) return 0;
  int biased = static_cast<int>(amaxBits >> 23);  // 0 for a subnormal amax: clamps below
  int k = biased - 127 - 8 + ((amaxBits & 0x7fffffu) > 0x600000u ? 1 : 0);
  k = k < kMinScaleExp ? kMinScaleExp : k;
  return k > kMaxScaleExp ? kMaxScaleExp : k;
}

/// The scale word stored on the wire for a block (see lp_wire_format.hpp).
RCCLX_LP_HOST_DEVICE inline float scaleWord(const BlockStats& s) {
  float scale = pow2(scaleExponent(s.amaxBits));
  return s.hasInf && !s.hasNan ? -scale : scale;
}

/// e4m3 code of a finite y with |y| <= 448, rounded to nearest even: bit-exact with
/// cpu::floatToE4m3 and with the hardware's saturating conversion on that range.
/// Branch-free, in signed 32-bit lanes (|y|'s bits are below 2^31), so that host compilers
/// vectorise it with plain SSE2.
RCCLX_LP_HOST_DEVICE inline uint8_t encodeScaled(float y) {
  const int32_t u = static_cast<int32_t>(bitsOf(y));
  const int32_t sign = (u >> 24) & 0x80;
  const int32_t a = u & 0x7fffffff;
  // Normal in e4m3 (|y| >= 2^-6): round the mantissa to 3 bits, then rebias 127 -> 7.
  const int32_t normal = ((a + 0x7ffff + ((a >> 20) & 1)) >> 20) - (120 << 3);
  // Subnormal in e4m3: units of 2^-9, rounded by adding 2^14 (whose ulp is 2^-9).
  const int32_t sub =
      static_cast<int32_t>(bitsOf(floatOf(static_cast<uint32_t>(a)) + 16384.0f)) - 0x46800000;
  const int32_t isNormal = -static_cast<int32_t>(a >= 0x3c800000);
  return static_cast<uint8_t>(sign | (normal & isNormal) | (sub & ~isNormal));
}

/// The code of element x of a block encoded with inverse scale `inv` (= 2^-k).
RCCLX_LP_HOST_DEVICE inline uint8_t encodeElement(float x, float inv) {
  uint32_t u = bitsOf(x);
  if ((u & 0x7fffffffu) >= 0x7f800000u) return static_cast<uint8_t>(((u >> 24) & 0x80u) | 0x7fu);
  return encodeScaled(x * inv);
}

/// Value of an e4m3 code (exact; NaN for 0x7f / 0xff).
RCCLX_LP_HOST_DEVICE inline float e4m3Value(uint8_t code) {
  uint32_t exp = (code >> 3) & 0xfu;
  uint32_t man = code & 0x7u;
  float v;
  if (exp == 0xfu && man == 0x7u) {
    v = floatOf(0x7fc00000u);
  } else if (exp == 0) {
    v = static_cast<float>(man) * (1.0f / 512.0f);
  } else {
    v = floatOf(((exp + 120u) << 23) | (man << 20));
  }
  return (code & 0x80u) ? -v : v;
}

/// The decoded value of `code` in a block whose scale word is `scale`.
RCCLX_LP_HOST_DEVICE inline float decodeElement(uint8_t code, float scale) {
  if ((code & 0x7fu) == 0x7fu) {
    if (bitsOf(scale) & 0x80000000u) return floatOf((code & 0x80u ? 0xff800000u : 0x7f800000u));
    return floatOf(0x7fc00000u);
  }
  return e4m3Value(code) * floatOf(bitsOf(scale) & 0x7fffffffu);
}

}  // namespace rcclx::lp
