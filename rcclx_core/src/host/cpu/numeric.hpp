// Scalar conversions between float and the 16- and 8-bit floating types, bit-exact and
// round-to-nearest-even, so CPU results match the GPU's hardware conversions.
//
// Rules: fp16 and bf16 follow IEEE (overflow -> inf, NaN kept). float8_e4m3 (OCP, no
// infinities) saturates: finite overflow and +-inf become +-448, NaN stays NaN (0x7f).
// float8_e5m2 (OCP) follows IEEE: overflow rounds to +-inf, NaN stays NaN.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace rcclx::cpu {

inline uint32_t floatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16ToFloat(uint16_t h) { return bitsFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return bitsFloat(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(man), -24);  // zero or subnormal, exact
    return sign ? -v : v;
  }
  return bitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t floatToHalf(float f) {
  uint32_t x = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) return sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u);
  if (x >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
  if (x < 0x38800000u) {                        // below 2^-14: subnormal (or zero) in fp16
    float units = std::nearbyint(bitsFloat(x) * 16777216.0f);  // in units of 2^-24, RNE
    return sign | static_cast<uint16_t>(units);
  }
  uint32_t h = (((x >> 23) - 112) << 10) | ((x & 0x7fffffu) >> 13);
  uint32_t rest = x & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return sign | static_cast<uint16_t>(h);
}

/// float -> an 8-bit float with `kExp` exponent and `kMan` mantissa bits, RNE.
template <int kExp, int kMan, bool kSaturate>
inline uint8_t floatToFp8(float f) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  // e4m3: the all-ones pattern is NaN and 0x7e (448) the largest finite; e5m2: 0x7b / inf 0x7c.
  constexpr uint8_t kMaxCode = kExp == 4 ? 0x7e : 0x7b;
  constexpr uint8_t kInfCode = kExp == 4 ? 0x7e : 0x7c;
  constexpr uint8_t kNanCode = 0x7f;
  uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | kNanCode;
  float a = std::fabs(f);
  if (std::isinf(a)) return sign | (kSaturate ? kMaxCode : kInfCode);
  constexpr int kMinNormalExp = 1 - kBias;
  uint32_t code;
  if (a < std::ldexp(1.0f, kMinNormalExp)) {
    code = static_cast<uint32_t>(std::nearbyint(std::ldexp(a, kMan - kMinNormalExp)));
  } else {
    int e;
    float fr = std::frexp(a, &e);  // a = fr * 2^e, fr in [0.5, 1)
    e -= 1;
    uint32_t q = static_cast<uint32_t>(std::nearbyint((fr * 2.0f - 1.0f) * (1 << kMan)));
    if (q == (1u << kMan)) {
      q = 0;
      ++e;
    }
    int biased = e + kBias;
    if (biased >= (1 << kExp)) return sign | (kSaturate ? kMaxCode : kInfCode);
    code = (static_cast<uint32_t>(biased) << kMan) | q;
  }
  if (code > kMaxCode) return sign | (kSaturate ? kMaxCode : kInfCode);
  return sign | static_cast<uint8_t>(code);
}

/// 8-bit float -> float (exact).
template <int kExp, int kMan>
inline float fp8ToFloat(uint8_t v) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  float sign = (v & 0x80) ? -1.0f : 1.0f;
  uint32_t exp = (v >> kMan) & ((1u << kExp) - 1);
  uint32_t man = v & ((1u << kMan) - 1);
  if (kExp == 4 && exp == 0xf && man == 0x7) return std::nanf("");
  if (kExp == 5 && exp == 0x1f) return man ? std::nanf("") : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(man), 1 - kBias - kMan);
  return sign *
         std::ldexp(1.0f + static_cast<float>(man) / (1 << kMan), static_cast<int>(exp) - kBias);
}

inline uint8_t floatToE4m3(float f) { return floatToFp8<4, 3, true>(f); }
inline uint8_t floatToE5m2(float f) { return floatToFp8<5, 2, false>(f); }

/// Decoding tables (256 entries each), filled once.
const float* e4m3Table();
const float* e5m2Table();

}  // namespace rcclx::cpu
