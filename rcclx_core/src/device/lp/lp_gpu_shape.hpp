// The launch shape of the low-precision GPU kernels: how many grid blocks, how many quantizer
// blocks per chunk, and how many round slots, so that a call's chunks fit the device staging.
// A pure function (no GPU needed), unit-tested on its own.
#pragma once

#include <cstddef>

namespace rcclx::lp {

struct LpShape {
  int blocks = 1;           ///< grid blocks
  int slots = 1;            ///< round slots: 1, or 2 when the kernel pipelines rounds
  size_t chunkBlocks = 1;   ///< quantizer blocks per chunk
  size_t chunkBytes = 0;    ///< staged bytes of one chunk
  size_t stagingBytes = 0;  ///< staging the shape uses, per parity half
};

/// Bytes of one staged chunk of `chunkBlocks` blocks of `blockElems` elements: the scales, then
/// the codes, each padded to 16 bytes.
size_t lpChunkBytes(size_t chunkBlocks, size_t blockElems);

/// Staging per parity half that `blocks` x `slots` x 2 phases x `nranks` chunks take.
size_t lpStagingBytes(int blocks, int slots, int nranks, size_t chunkBytes);

/// The shape for segments of at most `segmentBlocks` quantizer blocks: spread over up to
/// `maxBlocks` grid blocks first (small calls need the parallelism), chunks then grown up to
/// `maxChunkBlocks` (large calls need few rounds), halving the chunk, then the grid, until the
/// staging of `halfBytes` holds it. `oneSlot`: the kernel never needs a second round slot.
/// Throws InvalidArgument naming RCCLX_LP_GPU_STAGING_BYTES when not even one chunk fits.
LpShape lpLaunchShape(size_t segmentBlocks, size_t blockElems, int nranks, size_t halfBytes,
                      int maxBlocks, size_t maxChunkBlocks, bool oneSlot);

}  // namespace rcclx::lp
