// Implementation of fp8_block_quantizer.hpp: block loops around fp8_block_codec.hpp. The common
// case (a block of finite values) runs branch-free loops that vectorise with baseline SSE2;
// blocks with NaN or inf take the element-by-element path.
#include "lp/fp8_block_quantizer.hpp"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "ctran/checks.hpp"
#include "host/cpu/numeric.hpp"
#include "lp/fp8_block_codec.hpp"
#include "lp/lp_codec.hpp"

namespace rcclx::lp {
namespace {

// A block of the source as float32: float32 sources in place, bfloat16 widened into `tmp`.
struct SourceF32 {
  const float* p;
  const float* block(size_t lo, size_t, float*) const { return p + lo; }
};
struct SourceBf16 {
  const uint16_t* p;
  const float* block(size_t lo, size_t len, float* tmp) const {
    for (size_t i = 0; i < len; ++i) tmp[i] = cpu::bf16ToFloat(p[lo + i]);
    return tmp;
  }
};

// The block's largest finite |x| (as bits) and whether it holds NaN or inf. The compilers
// vectorise neither an unsigned nor a float max reduction with baseline SSE2, hence the
// intrinsics; |x| of finite values orders the same as float and as integer.
uint32_t blockAmax(const float* x, size_t len, bool* special) {
  size_t i = 0;
  uint32_t amax = 0, nonFinite = 0;
#if defined(__SSE2__)
  const __m128i absMask = _mm_set1_epi32(0x7fffffff);
  const __m128i inf = _mm_set1_epi32(0x7f800000);
  __m128 vmax = _mm_setzero_ps();
  __m128i vbad = _mm_setzero_si128();
  for (; i + 4 <= len; i += 4) {
    const __m128i a = _mm_and_si128(_mm_castps_si128(_mm_loadu_ps(x + i)), absMask);
    const __m128i finite = _mm_cmplt_epi32(a, inf);
    vbad = _mm_or_si128(vbad, _mm_andnot_si128(finite, absMask));
    vmax = _mm_max_ps(vmax, _mm_castsi128_ps(_mm_and_si128(a, finite)));
  }
  alignas(16) uint32_t lanes[4], bad[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), _mm_castps_si128(vmax));
  _mm_store_si128(reinterpret_cast<__m128i*>(bad), vbad);
  for (int k = 0; k < 4; ++k) {
    amax = std::max(amax, lanes[k]);
    nonFinite |= bad[k];
  }
#endif
  for (; i < len; ++i) {
    const uint32_t a = bitsOf(x[i]) & 0x7fffffffu;
    nonFinite |= a >= 0x7f800000u;
    amax = std::max(amax, a < 0x7f800000u ? a : 0u);
  }
  *special = nonFinite != 0;
  return amax;
}

template <typename Source>
void encodeImpl(Source src, size_t count, size_t blockElems, uint8_t* dst) {
  const size_t nb = wireBlocks(count, blockElems);
  const size_t codesAt = wireCodesOffset(count, blockElems);
  std::memset(dst + nb * kScaleBytes, 0, codesAt - nb * kScaleBytes);
  uint8_t* codes = dst + codesAt;
  std::memset(codes + count, 0, wireAlign(count) - count);
  float tmp[kMaxBlockElems];
  for (size_t b = 0; b < nb; ++b) {
    const size_t lo = b * blockElems;
    const size_t len = std::min(blockElems, count - lo);
    const float* x = src.block(lo, len, tmp);
    bool special = false;
    BlockStats s;
    s.amaxBits = blockAmax(x, len, &special);
    if (special) {
      for (size_t i = 0; i < len; ++i) s.add(x[i]);
    }
    const float scale = scaleWord(s);
    std::memcpy(dst + b * kScaleBytes, &scale, kScaleBytes);
    const float inv = pow2(-scaleExponent(s.amaxBits));
    uint8_t* out = codes + lo;
    if (!special) {
      for (size_t i = 0; i < len; ++i) out[i] = encodeScaled(x[i] * inv);  // vectorised
    } else {
      for (size_t i = 0; i < len; ++i) out[i] = encodeElement(x[i], inv);
    }
  }
}

// Calls store(i, value) for every element of the segment.
template <typename Store>
void decodeImpl(const uint8_t* src, size_t count, size_t blockElems, Store store) {
  const size_t nb = wireBlocks(count, blockElems);
  const uint8_t* codes = src + wireCodesOffset(count, blockElems);
  const float* table = cpu::e4m3Table();
  for (size_t b = 0; b < nb; ++b) {
    const size_t lo = b * blockElems;
    const size_t len = std::min(blockElems, count - lo);
    float scale;
    std::memcpy(&scale, src + b * kScaleBytes, kScaleBytes);
    const uint8_t* in = codes + lo;
    if (!(bitsOf(scale) & 0x80000000u)) {  // NaN codes decode to NaN through the table
      for (size_t i = 0; i < len; ++i) store(lo + i, table[in[i]] * scale);
    } else {
      for (size_t i = 0; i < len; ++i) store(lo + i, decodeElement(in[i], scale));
    }
  }
}

}  // namespace

void checkLpType(DataType type, const char* what) {
  CTRAN_CHECK(type == DataType::kFloat32 || type == DataType::kBfloat16, ctran::InvalidArgument,
              what, ": low precision carries float32 and bfloat16 only, not ", dataTypeName(type));
}

Fp8BlockQuantizer::Fp8BlockQuantizer(size_t blockElems) : blockElems_(blockElems) {
  CTRAN_CHECK(blockElems >= kMinBlockElems && blockElems <= kMaxBlockElems &&
                  blockElems % kMinBlockElems == 0,
              ctran::InvalidArgument, "RCCLX_LP_BLOCK_ELEMS=", blockElems,
              " must be a multiple of 32 from ", kMinBlockElems, " to ", kMaxBlockElems);
}

size_t Fp8BlockQuantizer::wireBytes(size_t count) const {
  return lp::wireBytes(count, blockElems_);
}

void Fp8BlockQuantizer::encode(const void* src, DataType type, size_t count, void* dst) const {
  checkLpType(type, "lp encode");
  auto* out = static_cast<uint8_t*>(dst);
  if (type == DataType::kFloat32) {
    encodeImpl(SourceF32{static_cast<const float*>(src)}, count, blockElems_, out);
  } else {
    encodeImpl(SourceBf16{static_cast<const uint16_t*>(src)}, count, blockElems_, out);
  }
}

void Fp8BlockQuantizer::decode(const void* src, size_t count, void* dst, DataType type) const {
  checkLpType(type, "lp decode");
  const auto* in = static_cast<const uint8_t*>(src);
  if (type == DataType::kFloat32) {
    auto* out = static_cast<float*>(dst);
    decodeImpl(in, count, blockElems_, [out](size_t i, float v) { out[i] = v; });
  } else {
    auto* out = static_cast<uint16_t*>(dst);
    // Decoded values are finite, +-inf or the canonical quiet NaN, so rounding to nearest even
    // needs no NaN case (and vectorises).
    decodeImpl(in, count, blockElems_, [out](size_t i, float v) {
      const uint32_t u = bitsOf(v);
      out[i] = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    });
  }
}

void Fp8BlockQuantizer::decodeAdd(const void* src, size_t count, float* acc, bool first) const {
  const auto* in = static_cast<const uint8_t*>(src);
  if (first) {
    decodeImpl(in, count, blockElems_, [acc](size_t i, float v) { acc[i] = v; });
  } else {
    decodeImpl(in, count, blockElems_, [acc](size_t i, float v) { acc[i] += v; });
  }
}

size_t lpWireBytes(size_t count, size_t blockElems) {
  return Fp8BlockQuantizer(blockElems).wireBytes(count);
}

void lpEncode(const void* src, DataType type, size_t count, size_t blockElems, void* dst) {
  Fp8BlockQuantizer(blockElems).encode(src, type, count, dst);
}

void lpDecode(const void* src, size_t count, size_t blockElems, void* dst, DataType type) {
  Fp8BlockQuantizer(blockElems).decode(src, count, dst, type);
}

}  // namespace rcclx::lp
