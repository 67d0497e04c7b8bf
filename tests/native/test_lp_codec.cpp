// rcclx_core/src/lp/lp_codec.hpp and fp8_block_codec.hpp: the low-precision wire format's sizes
// and layout, the scale and rounding rules on exact values, the round trip's error bound, and the
// handling of NaN and infinities.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "host/cpu/numeric.hpp"
#include "lp/fp8_block_codec.hpp"
#include "lp/lp_codec.hpp"
#include "lp/lp_wire_format.hpp"

using rcclx::DataType;
namespace lp = rcclx::lp;

namespace {

std::vector<uint8_t> encode(const std::vector<float>& x, size_t blockElems) {
  std::vector<uint8_t> wire(lp::lpWireBytes(x.size(), blockElems), 0xab);
  lp::lpEncode(x.data(), DataType::kFloat32, x.size(), blockElems, wire.data());
  return wire;
}

std::vector<float> decode(const std::vector<uint8_t>& wire, size_t count, size_t blockElems) {
  std::vector<float> y(count);
  lp::lpDecode(wire.data(), count, blockElems, y.data(), DataType::kFloat32);
  return y;
}

float scaleOf(const std::vector<uint8_t>& wire, size_t block) {
  float s;
  std::memcpy(&s, wire.data() + block * lp::kScaleBytes, sizeof(s));
  return s;
}

}  // namespace

TEST_CASE("wire sizes: scales then codes, each padded to 16 bytes") {
  CHECK_EQ(lp::lpWireBytes(0, 256), 0);
  CHECK_EQ(lp::lpWireBytes(1, 32), 16 + 16);
  CHECK_EQ(lp::lpWireBytes(256, 256), 16 + 256);
  CHECK_EQ(lp::lpWireBytes(257, 256), 16 + 272);
  CHECK_EQ(lp::lpWireBytes(1000, 32), 128 + 1008);  // 32 blocks: 128 bytes of scales
  CHECK_EQ(lp::wireCodesOffset(1000, 32), 128);
  CHECK_EQ(lp::wireBlocks(1000, 32), 32);
  // wireMaxElems: whole blocks whose segment fits.
  CHECK_EQ(lp::wireMaxElems(16 + 256, 256), 256);
  CHECK_EQ(lp::wireMaxElems(16 + 255, 256), 0);
  CHECK_EQ(lp::wireMaxElems(16 + 512, 256), 512);
  CHECK_THROWS_AS(lp::lpWireBytes(10, 48), ctran::InvalidArgument,
                  "RCCLX_LP_BLOCK_ELEMS=48 must be a multiple of 32 from 32 to 4096");
}

TEST_CASE("scale exponent: the smallest k with amax <= 448 * 2^k, clamped") {
  CHECK_EQ(lp::scaleExponent(0), 0);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(448.0f)), 0);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(std::nextafter(448.0f, 1e9f))), 1);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(1.0f)), -8);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(1.75f)), -8);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(1.76f)), -7);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(1e-45f)), lp::kMinScaleExp);
  CHECK_EQ(lp::scaleExponent(lp::bitsOf(std::numeric_limits<float>::max())), lp::kMaxScaleExp);
}

TEST_CASE("e4m3 codes: exact values and round to nearest even") {
  CHECK_EQ(lp::encodeScaled(448.0f), 0x7e);
  CHECK_EQ(lp::encodeScaled(1.0f), 0x38);
  CHECK_EQ(lp::encodeScaled(-2.0f), 0xc0);
  CHECK_EQ(lp::encodeScaled(0.0f), 0x00);
  CHECK_EQ(lp::encodeScaled(1.0f / 512), 0x01);  // the smallest subnormal
  CHECK_EQ(lp::encodeScaled(1.0625f), 0x38);     // halfway between 1 and 1.125: even, down
  CHECK_EQ(lp::encodeScaled(1.1875f), 0x3a);     // halfway between 1.125 and 1.25: even, up
  CHECK_EQ(lp::e4m3Value(0x7e), 448.0f);
  CHECK_EQ(lp::e4m3Value(0x01), 1.0f / 512);
  CHECK(std::isnan(lp::e4m3Value(0x7f)));
  // Every finite code's value encodes back to the code, as the host reference conversion does.
  int bad = 0;
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;
    const float v = lp::e4m3Value(static_cast<uint8_t>(code));
    bad += lp::encodeScaled(v) != code || rcclx::cpu::floatToE4m3(v) != code;
  }
  CHECK_EQ(bad, 0);
}

TEST_CASE("layout: scale words, codes, zero padding") {
  const std::vector<float> x = {1.0f, -448.0f, 0.5f, 0.0f, 3.0f};
  const std::vector<uint8_t> wire = encode(x, 32);
  CHECK_EQ(wire.size(), 32);
  CHECK_EQ(scaleOf(wire, 0), 1.0f);  // amax 448: k = 0
  const uint8_t want[5] = {0x38, 0xfe, 0x30, 0x00, 0x44};
  for (size_t i = 0; i < 5; ++i) CHECK_EQ(static_cast<int>(wire[16 + i]), want[i]);
  for (size_t i = 4; i < 16; ++i) CHECK_EQ(static_cast<int>(wire[i]), 0);
  for (size_t i = 21; i < 32; ++i) CHECK_EQ(static_cast<int>(wire[i]), 0);
  const std::vector<float> y = decode(wire, x.size(), 32);
  for (size_t i = 0; i < x.size(); ++i) CHECK_EQ(y[i], x[i]);  // all exact in e4m3
}

TEST_CASE("round trip: |x - y| <= |x| / 16 + 2^(k - 10) per block") {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t blockElems : {32, 256, 4096}) {
    for (size_t count : {size_t{1}, size_t{31}, blockElems, 3 * blockElems + 7}) {
      std::vector<float> x(count);
      for (size_t i = 0; i < count; ++i) x[i] = normal(rng) * std::ldexp(1.0f, int(i % 40) - 20);
      const std::vector<uint8_t> wire = encode(x, blockElems);
      const std::vector<float> y = decode(wire, count, blockElems);
      int bad = 0;
      for (size_t i = 0; i < count; ++i) {
        const float scale = scaleOf(wire, i / blockElems);
        const double bound = std::fabs(x[i]) / 16.0 + std::ldexp(double(scale), -10);
        bad += std::fabs(double(x[i]) - double(y[i])) > bound;
      }
      CHECK_EQ(bad, 0);
      // Each block's scale is the power of two scaleExponent gives for its largest |x|.
      for (size_t b = 0; b < lp::wireBlocks(count, blockElems); ++b) {
        float amax = 0;
        for (size_t i = b * blockElems; i < std::min(count, (b + 1) * blockElems); ++i) {
          amax = std::max(amax, std::fabs(x[i]));
        }
        CHECK_EQ(scaleOf(wire, b), lp::pow2(lp::scaleExponent(lp::bitsOf(amax))));
      }
    }
  }
}

TEST_CASE("round trip: bfloat16 in and out, within the same bound") {
  const size_t count = 300;
  std::vector<uint16_t> x(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = rcclx::cpu::floatToBf16(std::sin(float(i)) * 1000.0f);
  }
  std::vector<uint8_t> wire(lp::lpWireBytes(count, 128));
  lp::lpEncode(x.data(), DataType::kBfloat16, count, 128, wire.data());
  std::vector<uint16_t> y(count);
  lp::lpDecode(wire.data(), count, 128, y.data(), DataType::kBfloat16);
  int bad = 0;
  for (size_t i = 0; i < count; ++i) {
    const double xi = rcclx::cpu::bf16ToFloat(x[i]), yi = rcclx::cpu::bf16ToFloat(y[i]);
    const double scale = scaleOf(wire, i / 128);
    // The decoded values (4 significant bits) are exact in bfloat16: the bound is float32's.
    bad += std::fabs(xi - yi) > std::fabs(xi) / 16 + std::ldexp(scale, -10);
  }
  CHECK_EQ(bad, 0);
}

TEST_CASE("a block of zeros has scale 1 and decodes to zeros") {
  const std::vector<float> x(64, 0.0f);
  const std::vector<uint8_t> wire = encode(x, 32);
  CHECK_EQ(scaleOf(wire, 0), 1.0f);
  CHECK_EQ(scaleOf(wire, 1), 1.0f);
  for (float v : decode(wire, x.size(), 32)) CHECK_EQ(v, 0.0f);
}

TEST_CASE("infinities survive a block without NaN; NaN makes every special value NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x(64, 2.0f);
  x[0] = inf;
  x[1] = -inf;
  x[32] = inf;
  x[33] = nan;
  const std::vector<uint8_t> wire = encode(x, 32);
  CHECK_EQ(scaleOf(wire, 0), -lp::pow2(lp::scaleExponent(lp::bitsOf(2.0f))));  // negated
  CHECK(scaleOf(wire, 1) > 0);
  const std::vector<float> y = decode(wire, x.size(), 32);
  CHECK_EQ(y[0], inf);
  CHECK_EQ(y[1], -inf);
  CHECK_EQ(y[2], 2.0f);  // the finite values are scaled by the finite amax
  CHECK(std::isnan(y[32]));
  CHECK(std::isnan(y[33]));
  CHECK_EQ(y[34], 2.0f);
}

TEST_CASE("types other than float32 and bfloat16 are refused") {
  std::vector<int32_t> x(8);
  std::vector<uint8_t> wire(64);
  CHECK_THROWS_AS(lp::lpEncode(x.data(), DataType::kInt32, x.size(), 32, wire.data()),
                  ctran::InvalidArgument,
                  "lp encode: low precision carries float32 and bfloat16 only, not int32");
  CHECK_THROWS_AS(lp::lpDecode(wire.data(), x.size(), 32, x.data(), DataType::kFloat16),
                  ctran::InvalidArgument, "lp decode: low precision carries float32");
}
