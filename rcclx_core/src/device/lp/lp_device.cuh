// Device side of the low-precision collectives: a tile of 16 lanes quantizes, decodes or
// decodes-and-sums one quantizer block at a time, with the arithmetic of fp8_block_codec.hpp,
// so the GPU produces the bytes and values the CPU path does.
//
// Lane l of a tile (16 lanes; a warp works on two blocks at once) handles elements
// [s * 256 + 16 l, + 16) of the block in step s (blocks are multiples of 32 elements, so a
// lane's 16 elements are all in the block or all past its end). A block of up to 256 elements
// takes one step and stays in registers; a larger one is read twice (once for its largest
// magnitude, once to encode).
//
// Staged chunks (a run of whole blocks of one segment, in a rank's staging) are laid out as
//   [ scales: chunkBlocks x float32, padded to 16 bytes ][ codes: chunkBlocks x blockElems ]
// so block i of a chunk has its scale at scales[i] and its codes at codes + i * blockElems.
#pragma once

#include <cstdint>

#include "ctran/gpu_runtime.hpp"
#include "ctran/signal_device.cuh"
#include "lp/fp8_block_codec.hpp"

namespace rcclx::lp::device {

/// Lanes that share one block (half a warp on NVIDIA, a quarter wavefront on AMD).
constexpr int kTile = 16;
/// Elements per lane and step.
constexpr int kLaneElems = 16;
/// Elements per tile and step.
constexpr int kStepElems = kTile * kLaneElems;

/// One chunk's scale and code parts (in this rank's staging or a peer's).
struct ChunkRef {
  float* scales;
  uint8_t* codes;
};

__device__ __forceinline__ ChunkRef chunkAt(char* base, size_t chunkBlocks) {
  return {reinterpret_cast<float*>(base),
          reinterpret_cast<uint8_t*>(base + wireAlign(chunkBlocks * kScaleBytes))};
}

/// v of the lane whose index in the tile is this lane's xor `mask`. The tiles of a warp may
/// diverge (one has a block more than the other), so each names only its own lanes.
template <typename T>
__device__ __forceinline__ T tileShuffleXor(T v, int mask) {
#if RCCLX_GPU_HIP
  return __shfl_xor(v, mask, kTile);
#else
  static_assert(32 % kTile == 0, "tiles split warps evenly");
  const unsigned lanes = (1u << kTile) - 1u;  // kTile < 32
  const unsigned mine = lanes << (threadIdx.x % 32 / kTile * kTile);
  return __shfl_xor_sync(mine, v, mask, kTile);
#endif
}

/// The block's statistics over the whole tile (every lane of the tile gets the result).
__device__ __forceinline__ BlockStats tileReduce(BlockStats s) {
  uint32_t amax = s.amaxBits;
  uint32_t special = (s.hasNan ? 1u : 0u) | (s.hasInf ? 2u : 0u);
#pragma unroll
  for (int m = kTile / 2; m > 0; m >>= 1) {
    const uint32_t a = tileShuffleXor(amax, m);
    amax = a > amax ? a : amax;
    special |= tileShuffleXor(special, m);
  }
  BlockStats r;
  r.amaxBits = amax;
  r.hasNan = (special & 1u) != 0;
  r.hasInf = (special & 2u) != 0;
  return r;
}

/// float -> bf16 bits, round to nearest even, NaN kept quiet with its upper bits (as the CPU).
__device__ __forceinline__ uint16_t floatToBf16Bits(float f) {
  uint32_t u = bitsOf(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// Loads a lane's kLaneElems elements starting at element `e` of `base` (float32 or bfloat16),
/// of which `avail` (possibly <= 0) exist; the others read as 0.
template <bool kBf16>
__device__ __forceinline__ void loadLane(const void* base, size_t e, long long avail,
                                         float v[kLaneElems]) {
  if constexpr (kBf16) {
    const uint16_t* p = static_cast<const uint16_t*>(base) + e;
    if (avail >= kLaneElems && (reinterpret_cast<uintptr_t>(p) & 15u) == 0) {
      uint4 w[kLaneElems / 8];
#pragma unroll
      for (int k = 0; k < kLaneElems / 8; ++k) w[k] = reinterpret_cast<const uint4*>(p)[k];
#pragma unroll
      for (int k = 0; k < kLaneElems / 8; ++k) {
        const uint32_t words[4] = {w[k].x, w[k].y, w[k].z, w[k].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          v[8 * k + 2 * i] = floatOf(words[i] << 16);
          v[8 * k + 2 * i + 1] = floatOf(words[i] & 0xffff0000u);
        }
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i)
      v[i] = i < avail ? floatOf(static_cast<uint32_t>(p[i]) << 16) : 0.0f;
  } else {
    const float* p = static_cast<const float*>(base) + e;
    if (avail >= kLaneElems && (reinterpret_cast<uintptr_t>(p) & 15u) == 0) {
      float4 w[kLaneElems / 4];
#pragma unroll
      for (int k = 0; k < kLaneElems / 4; ++k) w[k] = reinterpret_cast<const float4*>(p)[k];
#pragma unroll
      for (int k = 0; k < kLaneElems / 4; ++k) {
        v[4 * k] = w[k].x, v[4 * k + 1] = w[k].y, v[4 * k + 2] = w[k].z, v[4 * k + 3] = w[k].w;
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) v[i] = i < avail ? p[i] : 0.0f;
  }
}

/// Two floats as bfloat16 bits (lo in the low half), rounded to nearest even; the hardware's
/// conversion where the values hold no NaN (its NaN bits differ from floatToBf16Bits()).
__device__ __forceinline__ uint32_t packBf16(float lo, float hi, bool mayHoldNan) {
#if !RCCLX_GPU_HIP && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (!mayHoldNan) {
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
#endif
  (void)mayHoldNan;
  return floatToBf16Bits(lo) | (static_cast<uint32_t>(floatToBf16Bits(hi)) << 16);
}

/// Stores the first `avail` (<= kLaneElems) of a lane's values at element `e` of `base`.
template <bool kBf16>
__device__ __forceinline__ void storeLane(void* base, size_t e, long long avail,
                                          const float v[kLaneElems], bool mayHoldNan) {
  if (avail <= 0) return;
  if constexpr (kBf16) {
    uint16_t* p = static_cast<uint16_t*>(base) + e;
    if (avail >= kLaneElems && (reinterpret_cast<uintptr_t>(p) & 15u) == 0) {
#pragma unroll
      for (int k = 0; k < kLaneElems / 8; ++k) {
        uint32_t w[4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
          w[i] = packBf16(v[8 * k + 2 * i], v[8 * k + 2 * i + 1], mayHoldNan);
        reinterpret_cast<uint4*>(p)[k] = make_uint4(w[0], w[1], w[2], w[3]);
      }
      return;
    }
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i)
      if (i < avail) p[i] = floatToBf16Bits(v[i]);
  } else {
    float* p = static_cast<float*>(base) + e;
    if (avail >= kLaneElems && (reinterpret_cast<uintptr_t>(p) & 15u) == 0) {
#pragma unroll
      for (int k = 0; k < kLaneElems / 4; ++k)
        reinterpret_cast<float4*>(p)[k] =
            make_float4(v[4 * k], v[4 * k + 1], v[4 * k + 2], v[4 * k + 3]);
      return;
    }
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i)
      if (i < avail) p[i] = v[i];
  }
}

/// Staged scale words (this GPU path's own staging, not the wire format) carry in their lowest
/// mantissa bit, which a power of two leaves clear, whether the block holds NaN or inf codes:
/// blocks without take the fast paths below, the others the element-by-element rules.
constexpr uint32_t kSpecialBit = 1u;

__device__ __forceinline__ bool isSpecial(float stagedScale) {
  return (bitsOf(stagedScale) & kSpecialBit) != 0;
}

/// The codes of a lane's finite values (byte i of word i / 4 is value i's code), encoded with
/// inverse scale `inv`: |v * inv| <= 448 by the choice of scale, where the hardware's
/// conversion rounds exactly as encodeScaled() does.
__device__ __forceinline__ uint4 encodeLaneFinite(const float v[kLaneElems], float inv) {
  uint32_t word[kLaneElems / 4];
#pragma unroll
  for (int i = 0; i < kLaneElems; i += 4) {
#if RCCLX_GPU_FP8_HW && !RCCLX_GPU_HIP
    uint16_t lo, hi;
    // The first source goes to the upper byte.
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"
        : "=h"(lo)
        : "f"(v[i + 1] * inv), "f"(v[i] * inv));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"
        : "=h"(hi)
        : "f"(v[i + 3] * inv), "f"(v[i + 2] * inv));
    word[i / 4] = static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
#else
    word[i / 4] = static_cast<uint32_t>(encodeScaled(v[i] * inv)) |
                  (static_cast<uint32_t>(encodeScaled(v[i + 1] * inv)) << 8) |
                  (static_cast<uint32_t>(encodeScaled(v[i + 2] * inv)) << 16) |
                  (static_cast<uint32_t>(encodeScaled(v[i + 3] * inv)) << 24);
#endif
  }
  return make_uint4(word[0], word[1], word[2], word[3]);
}

/// The same for values that may be NaN or inf (encodeElement(), element by element).
__device__ __forceinline__ uint4 encodeLaneAny(const float v[kLaneElems], float inv) {
  uint32_t word[kLaneElems / 4] = {};
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i)
    word[i / 4] |= static_cast<uint32_t>(encodeElement(v[i], inv)) << (8 * (i % 4));
  return make_uint4(word[0], word[1], word[2], word[3]);
}

/// Decodes a lane's codes of a block without NaN / inf codes; `mag` is the scale's magnitude.
/// e4m3 -> f16 -> f32 is exact, and so is the product with a power of two.
__device__ __forceinline__ void decodeLaneFinite(uint4 codes, float mag, float out[kLaneElems]) {
  const uint32_t words[4] = {codes.x, codes.y, codes.z, codes.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#if RCCLX_GPU_FP8_HW && !RCCLX_GPU_HIP
    float f[4];
    asm("{ .reg .b16 c0, c1, h0, h1, h2, h3; .reg .b32 p0, p1;\n\t"
        "mov.b32 {c0, c1}, %4;\n\t"
        "cvt.rn.f16x2.e4m3x2 p0, c0;\n\t"
        "cvt.rn.f16x2.e4m3x2 p1, c1;\n\t"
        "mov.b32 {h0, h1}, p0;\n\t"
        "mov.b32 {h2, h3}, p1;\n\t"
        "cvt.f32.f16 %0, h0;\n\t"
        "cvt.f32.f16 %1, h1;\n\t"
        "cvt.f32.f16 %2, h2;\n\t"
        "cvt.f32.f16 %3, h3; }"
        : "=f"(f[0]), "=f"(f[1]), "=f"(f[2]), "=f"(f[3])
        : "r"(words[k]));
#pragma unroll
    for (int j = 0; j < 4; ++j) out[4 * k + j] = f[j] * mag;
#else
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t c = (words[k] >> (8 * j)) & 0xffu;
      // floatOf(m << 20) * 2^120 is the e4m3 magnitude (subnormal codes through a subnormal).
      const float x = floatOf((c & 0x7fu) << 20) * 0x1p120f * mag;
      out[4 * k + j] = floatOf(bitsOf(x) | ((c & 0x80u) << 24));
    }
#endif
  }
}

/// Decodes a lane's codes of any block (decodeElement(), exactly); `stagedScale` as staged.
__device__ __forceinline__ void decodeLaneAny(uint4 codes, float stagedScale,
                                              float out[kLaneElems]) {
  const uint32_t sbits = bitsOf(stagedScale);
  const float mag = floatOf(sbits & 0x7f800000u);
  const bool nanIsInf = (sbits & 0x80000000u) != 0;
  const uint32_t words[4] = {codes.x, codes.y, codes.z, codes.w};
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i) {
    const uint32_t c = (words[i / 4] >> (8 * (i % 4))) & 0xffu;
    const uint32_t m = c & 0x7fu;
    const float x = floatOf(m << 20) * 0x1p120f * mag;
    uint32_t r = bitsOf(x) | ((c & 0x80u) << 24);
    if (m == 0x7fu) r = nanIsInf ? ((c & 0x80u) ? 0xff800000u : 0x7f800000u) : 0x7fc00000u;
    out[i] = floatOf(r);
  }
}

/// Decodes with the path the staged scale calls for (the same for every lane of the tile).
__device__ __forceinline__ void decodeLane(uint4 codes, float stagedScale, float out[kLaneElems]) {
  if (isSpecial(stagedScale)) {
    decodeLaneAny(codes, stagedScale, out);
  } else {
    decodeLaneFinite(codes, floatOf(bitsOf(stagedScale) & 0x7f800000u), out);
  }
}

/// A lane's staged codes and its block's scale.
__device__ __forceinline__ void loadStagedLane(const ChunkRef& c, size_t index, int blockElems,
                                               int e, uint4& codes, float& scale) {
  scale = ctran::device::loadPeerStored(c.scales + index);
  codes = ctran::device::loadPeerStored(
      reinterpret_cast<const uint4*>(c.codes + index * blockElems + e));
}

/// Lane-value sources for tileEncode() and tileStore(): the caller's float32 / bfloat16
/// elements...; load() also says whether the values may hold NaN (for the bfloat16 rounding).
template <bool kBf16>
struct InputSource {
  const void* base;  ///< element 0 of the block
  long long len;     ///< elements of the block that exist
  __device__ __forceinline__ bool load(int e, float v[kLaneElems]) const {
    loadLane<kBf16>(base, static_cast<size_t>(e), len - e, v);
    return true;
  }
};

/// ... or the float32 sum, in rank order 0..n-1, of block `index` of the chunks staged by the
/// peers and of this rank's own input block, read exactly (it never crosses a link), divided by
/// n for AVG. Past the block's length the staged codes are padding zeros and the input reads 0.
template <bool kBf16>
struct StagedSumSource {
  const ChunkRef* chunks;  ///< by source rank (chunks[me] unused)
  int nranks;
  int me;
  const void* own;  ///< element 0 of this rank's input block
  long long ownLen;
  size_t index;
  int blockElems;
  bool average;
  __device__ __forceinline__ bool load(int e, float v[kLaneElems]) const {
    bool special = false;
    // Two ranks' loads in flight at a time; the sum stays in rank order.
    for (int q = 0; q < nranks; q += 2) {
      uint4 codes[2];
      float scale[2];
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        if (q + k < nranks && q + k != me)
          loadStagedLane(chunks[q + k], index, blockElems, e, codes[k], scale[k]);
      }
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        if (q + k >= nranks) break;
        float d[kLaneElems];
        if (q + k == me) {
          loadLane<kBf16>(own, static_cast<size_t>(e), ownLen - e, d);
#pragma unroll
          for (int i = 0; i < kLaneElems; ++i) special |= d[i] != d[i];
        } else {
          special |= isSpecial(scale[k]);
          decodeLane(codes[k], scale[k], d);
        }
#pragma unroll
        for (int i = 0; i < kLaneElems; ++i) v[i] = q + k == 0 ? d[i] : v[i] + d[i];
      }
    }
    if (average) {
      const float div = static_cast<float>(nranks);
#pragma unroll
      for (int i = 0; i < kLaneElems; ++i) v[i] = v[i] / div;
    }
    return special;  // sums of finite values overflow to inf at worst, never to NaN
  }
};

/// What tileEncode() also does with a lane's codes: nothing...
struct NoSink {
  __device__ __forceinline__ void put(int, uint4, float) const {}
};

/// ... or decode them into an output block of `len` elements (the allreduce's own shard, which
/// thereby needs no staged copy).
template <bool kBf16>
struct DecodeSink {
  void* out;
  long long len;
  __device__ __forceinline__ void put(int e, uint4 codes, float stagedScale) const {
    if (e >= len) return;
    float v[kLaneElems];
    decodeLane(codes, stagedScale, v);
    storeLane<kBf16>(out, static_cast<size_t>(e), len - e, v, isSpecial(stagedScale));
  }
};

/// Quantizes one block (every lane of the tile calls it) from `src` into block `index` of each
/// of the `ndst` chunks (and hands each lane's codes to `sink`). Blocks of finite values (the
/// tile's largest magnitude bits below inf's) take the fast path; the others recompute the full
/// statistics.
template <typename Source, typename Sink = NoSink>
__device__ __forceinline__ void tileEncode(const Source& src, int blockElems, const ChunkRef* dst,
                                           int ndst, size_t index, const Sink& sink = Sink()) {
  const int lane = static_cast<int>(threadIdx.x) % kTile;
  const int steps = (blockElems + kStepElems - 1) / kStepElems;
  float v[kLaneElems];
  uint32_t amax = 0;
  for (int s = 0; s < steps; ++s) {
    const int e = s * kStepElems + lane * kLaneElems;
    if (e < blockElems) {
      src.load(e, v);
#pragma unroll
      for (int i = 0; i < kLaneElems; ++i) {
        const uint32_t a = bitsOf(v[i]) & 0x7fffffffu;
        amax = a > amax ? a : amax;
      }
    }
  }
#pragma unroll
  for (int m = kTile / 2; m > 0; m >>= 1) {
    const uint32_t a = tileShuffleXor(amax, m);
    amax = a > amax ? a : amax;
  }
  const bool special = amax >= 0x7f800000u;  // the same in every lane of the tile
  BlockStats stats;
  stats.amaxBits = amax;
  if (special) {
    stats = BlockStats();
    for (int s = 0; s < steps; ++s) {
      const int e = s * kStepElems + lane * kLaneElems;
      if (e < blockElems) {
        if (steps > 1) src.load(e, v);
#pragma unroll
        for (int i = 0; i < kLaneElems; ++i) stats.add(v[i]);
      }
    }
    stats = tileReduce(stats);
  }
  const float scale = floatOf(bitsOf(scaleWord(stats)) | (special ? kSpecialBit : 0u));
  const float inv = pow2(-scaleExponent(stats.amaxBits));
  for (int s = 0; s < steps; ++s) {
    const int e = s * kStepElems + lane * kLaneElems;
    if (e >= blockElems) break;
    if (steps > 1) src.load(e, v);
    const uint4 codes = special ? encodeLaneAny(v, inv) : encodeLaneFinite(v, inv);
    for (int d = 0; d < ndst; ++d)
      *reinterpret_cast<uint4*>(dst[d].codes + index * blockElems + e) = codes;
    sink.put(e, codes, scale);
  }
  if (lane == 0) {
    for (int d = 0; d < ndst; ++d) dst[d].scales[index] = scale;
  }
}

/// Stores `src`'s values of one block (`len` elements exist) at `out` (float32 or bfloat16).
template <bool kBf16, typename Source>
__device__ __forceinline__ void tileStore(const Source& src, int blockElems, void* out,
                                          long long len) {
  const int lane = static_cast<int>(threadIdx.x) % kTile;
  for (int e = lane * kLaneElems; e < blockElems && e < len; e += kStepElems) {
    float v[kLaneElems];
    const bool mayHoldNan = src.load(e, v);
    storeLane<kBf16>(out, static_cast<size_t>(e), len - e, v, mayHoldNan);
  }
}

/// Decodes block `index` of a staged chunk (`len` elements exist) into `out`.
template <bool kBf16>
__device__ __forceinline__ void tileDecode(const ChunkRef& c, size_t index, int blockElems,
                                           void* out, long long len) {
  const int lane = static_cast<int>(threadIdx.x) % kTile;
  for (int e = lane * kLaneElems; e < blockElems && e < len; e += kStepElems) {
    uint4 codes;
    float scale;
    loadStagedLane(c, index, blockElems, e, codes, scale);
    float v[kLaneElems];
    decodeLane(codes, scale, v);
    storeLane<kBf16>(out, static_cast<size_t>(e), len - e, v, isSpecial(scale));
  }
}

}  // namespace rcclx::lp::device
