// Implementation of rcclx/lp_gpu_shape.hpp.
#include "device/lp/lp_gpu_shape.hpp"

#include <algorithm>

#include "ctran/checks.hpp"

namespace rcclx::lp {
namespace {

size_t ceilDiv(size_t a, size_t b) { return (a + b - 1) / b; }
size_t pad16(size_t bytes) { return (bytes + 15) / 16 * 16; }

}  // namespace

size_t lpChunkBytes(size_t chunkBlocks, size_t blockElems) {
  return pad16(chunkBlocks * 4) + pad16(chunkBlocks * blockElems);
}

size_t lpStagingBytes(int blocks, int slots, int nranks, size_t chunkBytes) {
  return static_cast<size_t>(blocks) * static_cast<size_t>(slots) * 2 *
         static_cast<size_t>(nranks) * chunkBytes;
}

LpShape lpLaunchShape(size_t segmentBlocks, size_t blockElems, int nranks, size_t halfBytes,
                      int maxBlocks, size_t maxChunkBlocks, bool oneSlot) {
  CTRAN_CHECK(maxBlocks >= 1 && maxChunkBlocks >= 1 && nranks >= 1 && blockElems >= 1,
              ctran::InvalidArgument, "low-precision launch shape: maxBlocks=", maxBlocks,
              ", maxChunkBlocks=", maxChunkBlocks, ", nranks=", nranks, ", blockElems=", blockElems,
              " must all be positive");
  const size_t segment = std::max<size_t>(segmentBlocks, 1);
  size_t chunk = std::min(maxChunkBlocks, ceilDiv(segment, static_cast<size_t>(maxBlocks)));
  int blocksCap = maxBlocks;
  LpShape s;
  for (;;) {
    const size_t chunks = ceilDiv(segment, chunk);
    s.blocks = static_cast<int>(std::min<size_t>(static_cast<size_t>(blocksCap), chunks));
    s.slots = !oneSlot && ceilDiv(chunks, static_cast<size_t>(s.blocks)) > 1 ? 2 : 1;
    s.chunkBlocks = chunk;
    s.chunkBytes = lpChunkBytes(chunk, blockElems);
    s.stagingBytes = lpStagingBytes(s.blocks, s.slots, nranks, s.chunkBytes);
    if (s.stagingBytes <= halfBytes) return s;
    if (chunk > 1) {
      chunk = (chunk + 1) / 2;
    } else if (blocksCap > 1) {
      blocksCap /= 2;
    } else {
      throw ctran::InvalidArgument(
          ctran::strCat("low precision on GPU buffers: RCCLX_LP_GPU_STAGING_BYTES=", halfBytes,
                        " cannot hold one chunk of ", blockElems, "-element blocks for ", nranks,
                        " ranks (", s.stagingBytes, " bytes needed)"));
    }
  }
}

}  // namespace rcclx::lp
