// The wire format of low-precision (LP) collectives: one definition for the CPU and GPU paths.
//
// A *segment* is a run of `count` elements that the collective treats as one tensor (a shard of
// an allreduce, one rank's block of an all_gather or reduce_scatter, one (source, destination)
// block of an all_to_all). Its elements are cut into blocks of `blockElems` from its first
// element; the last block may be shorter. A segment (or a piece of one that starts on a block
// boundary: a pipelined chunk) travels as
//
//   [ scales: nblocks x float32, zero-padded to a multiple of 16 bytes ]
//   [ codes:  count x float8_e4m3 (OCP), zero-padded to a multiple of 16 bytes ]
//
// nblocks = ceil(count / blockElems); code i belongs to block i / blockElems. Both parts start on
// 16-byte boundaries so a GPU kernel moves them with 16-byte vector loads. Scale words:
//   +2^k  the block's codes decode to e4m3(code) * 2^k; the e4m3 NaN codes (0x7f, 0xff) to NaN
//   -2^k  the same, except that the NaN codes decode to +inf (0x7f) and -inf (0xff): the block
//         held an infinity and no NaN
// The scale is always a power of two between 2^-126 and 2^120 (1.0 for a block of zeros); see
// fp8_block_codec.hpp for how it is chosen and how each element is rounded. Padding is zero.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RCCLX_LP_HOST_DEVICE __host__ __device__
#else
#define RCCLX_LP_HOST_DEVICE
#endif

namespace rcclx::lp {

/// Alignment of the two parts of a segment, and of segments packed one after another.
constexpr size_t kWireAlign = 16;
/// Bytes of one block's scale.
constexpr size_t kScaleBytes = 4;
/// Allowed block sizes (RCCLX_LP_BLOCK_ELEMS): multiples of 32 in this range.
constexpr size_t kMinBlockElems = 32;
constexpr size_t kMaxBlockElems = 4096;

RCCLX_LP_HOST_DEVICE inline constexpr size_t wireAlign(size_t bytes) {
  return (bytes + kWireAlign - 1) / kWireAlign * kWireAlign;
}

/// Number of blocks (scales) of a segment of `count` elements.
RCCLX_LP_HOST_DEVICE inline constexpr size_t wireBlocks(size_t count, size_t blockElems) {
  return (count + blockElems - 1) / blockElems;
}

/// Offset of the codes within a segment (the size of its scale part).
RCCLX_LP_HOST_DEVICE inline constexpr size_t wireCodesOffset(size_t count, size_t blockElems) {
  return wireAlign(wireBlocks(count, blockElems) * kScaleBytes);
}

/// Bytes a segment of `count` elements takes on the wire (0 for an empty segment).
RCCLX_LP_HOST_DEVICE inline constexpr size_t wireBytes(size_t count, size_t blockElems) {
  return wireCodesOffset(count, blockElems) + wireAlign(count);
}

/// The most elements, a whole number of blocks, whose segment fits in `bytes` (0 if not even
/// one block fits).
RCCLX_LP_HOST_DEVICE inline constexpr size_t wireMaxElems(size_t bytes, size_t blockElems) {
  size_t blocks = bytes / (blockElems + kScaleBytes);
  while (blocks > 0 && wireBytes(blocks * blockElems, blockElems) > bytes) --blocks;
  return blocks * blockElems;
}

}  // namespace rcclx::lp
