// rcclx_core/src/device/lp/lp_gpu_shape.hpp: the launch shape of the low-precision GPU kernels
// (grid blocks, chunk size, round slots) and the staging it takes, computed on the host.
#include <string>

#include "check.hpp"
#include "ctran/checks.hpp"
#include "device/lp/lp_gpu_shape.hpp"

using rcclx::lp::lpChunkBytes;
using rcclx::lp::lpLaunchShape;
using rcclx::lp::LpShape;
using rcclx::lp::lpStagingBytes;

namespace {

void checkShape(const LpShape& s, int blocks, int slots, size_t chunkBlocks, size_t chunkBytes,
                size_t stagingBytes, const char* file, int line) {
  if (s.blocks != blocks || s.slots != slots || s.chunkBlocks != chunkBlocks ||
      s.chunkBytes != chunkBytes || s.stagingBytes != stagingBytes) {
    auto text = [](int b, int sl, size_t cb, size_t cbytes, size_t st) {
      return "{blocks=" + std::to_string(b) + ", slots=" + std::to_string(sl) +
             ", chunkBlocks=" + std::to_string(cb) + ", chunkBytes=" + std::to_string(cbytes) +
             ", stagingBytes=" + std::to_string(st) + "}";
    };
    check::fail(file, line,
                "shape " + text(s.blocks, s.slots, s.chunkBlocks, s.chunkBytes, s.stagingBytes) +
                    ", expected " + text(blocks, slots, chunkBlocks, chunkBytes, stagingBytes));
  }
}

#define CHECK_SHAPE(s, blocks, slots, chunkBlocks, chunkBytes, stagingBytes)                \
  checkShape((s), (blocks), (slots), (chunkBlocks), (chunkBytes), (stagingBytes), __FILE__, \
             __LINE__)

constexpr size_t kHalf40M = size_t{40} << 20;  // RCCLX_LP_GPU_STAGING_BYTES' default

}  // namespace

TEST_CASE("chunk bytes: scales and codes, each padded to 16 bytes") {
  CHECK_EQ(lpChunkBytes(1, 256), 16 + 256);
  CHECK_EQ(lpChunkBytes(3, 32), 16 + 96);
  CHECK_EQ(lpChunkBytes(5, 32), 32 + 160);
  CHECK_EQ(lpChunkBytes(128, 256), 512 + 32768);
}

TEST_CASE("staging bytes: blocks x slots x 2 phases x ranks chunks") {
  CHECK_EQ(lpStagingBytes(1, 1, 2, 272), 1088);
  CHECK_EQ(lpStagingBytes(256, 2, 8, 33280), size_t{272629760});
}

TEST_CASE("a small call spreads one quantizer block per grid block, one slot") {
  CHECK_SHAPE(lpLaunchShape(10, 256, 4, kHalf40M, 256, 128, false), 10, 1, 1, 272, 21760);
  // An empty segment still launches one block.
  CHECK_SHAPE(lpLaunchShape(0, 256, 2, kHalf40M, 256, 128, false), 1, 1, 1, 272, 1088);
}

TEST_CASE("a large call grows its chunks, then halves them until the staging holds two slots") {
  // 128-block chunks take 272629760 bytes, 64: 136314880, 32: 68157440, 16: 34078720 <= 40M.
  CHECK_SHAPE(lpLaunchShape(1000000, 256, 8, kHalf40M, 256, 128, false), 256, 2, 16, 4160,
              34078720);
  // One slot halves the staging, so chunks of 32 fit.
  CHECK_SHAPE(lpLaunchShape(1000000, 256, 8, kHalf40M, 256, 128, true), 256, 1, 32, 8320, 34078720);
  // Halving rounds up: 6 -> 3 -> 2 (3 takes more than 6: its 500 chunks need two slots).
  CHECK_SHAPE(lpLaunchShape(1500, 256, 8, 5000000, 256, 128, false), 256, 2, 2, 528, 4325376);
  // Enough staging: the largest chunk.
  CHECK_SHAPE(lpLaunchShape(1000000, 256, 8, 272629760, 256, 128, false), 256, 2, 128, 33280,
              272629760);
}

TEST_CASE("a small staging shrinks the chunk to one block, then the grid") {
  CHECK_SHAPE(lpLaunchShape(1000, 4096, 8, 1000000, 256, 128, false), 4, 2, 1, 4112, 526336);
  // Exactly one chunk's worth of staging is enough.
  CHECK_SHAPE(lpLaunchShape(1, 256, 2, 1088, 256, 128, false), 1, 1, 1, 272, 1088);
}

TEST_CASE("staging too small for one chunk: refused, naming RCCLX_LP_GPU_STAGING_BYTES") {
  CHECK_THROWS_AS(lpLaunchShape(1, 256, 2, 1087, 256, 128, false), ctran::InvalidArgument,
                  "low precision on GPU buffers: RCCLX_LP_GPU_STAGING_BYTES=1087 cannot hold one "
                  "chunk of 256-element blocks for 2 ranks (1088 bytes needed)");
}

TEST_CASE("non-positive limits are refused") {
  CHECK_THROWS_AS(lpLaunchShape(10, 256, 2, kHalf40M, 0, 128, false), ctran::InvalidArgument,
                  "low-precision launch shape: maxBlocks=0, maxChunkBlocks=128, nranks=2, "
                  "blockElems=256 must all be positive");
  CHECK_THROWS_AS(lpLaunchShape(10, 256, 2, kHalf40M, 4, 0, false), ctran::InvalidArgument,
                  "maxChunkBlocks=0");
  CHECK_THROWS_AS(lpLaunchShape(10, 256, 0, kHalf40M, 4, 8, false), ctran::InvalidArgument,
                  "nranks=0");
}

TEST_CASE("every shape fits its staging and its limits; only an impossible one is refused") {
  int bad = 0, cases = 0;
  for (size_t segment : {1, 7, 256, 1000, 12345, 1 << 20}) {
    for (size_t blockElems : {32, 256, 4096}) {
      for (int nranks : {2, 3, 8}) {
        for (size_t half : {size_t{1} << 16, size_t{1} << 22, kHalf40M}) {
          for (bool oneSlot : {false, true}) {
            LpShape s;
            try {
              s = lpLaunchShape(segment, blockElems, nranks, half, 256, 128, oneSlot);
            } catch (const ctran::InvalidArgument&) {
              // Only when the smallest shape, one block of one-block chunks, does not fit.
              const int slots = !oneSlot && segment > 1 ? 2 : 1;
              bad += lpStagingBytes(1, slots, nranks, lpChunkBytes(1, blockElems)) <= half;
              continue;
            }
            ++cases;
            const size_t chunks = (segment + s.chunkBlocks - 1) / s.chunkBlocks;
            const size_t rounds = (chunks + s.blocks - 1) / s.blocks;
            bad += s.stagingBytes > half;
            bad += s.stagingBytes != lpStagingBytes(s.blocks, s.slots, nranks, s.chunkBytes);
            bad += s.chunkBytes != lpChunkBytes(s.chunkBlocks, blockElems);
            bad += s.blocks < 1 || s.blocks > 256 || s.chunkBlocks < 1 || s.chunkBlocks > 128;
            bad += static_cast<size_t>(s.blocks) > chunks;
            bad += s.slots != (!oneSlot && rounds > 1 ? 2 : 1);
          }
        }
      }
    }
  }
  CHECK(cases > 100);
  CHECK_EQ(bad, 0);
}
