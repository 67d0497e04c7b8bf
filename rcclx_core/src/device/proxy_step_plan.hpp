// How a call across hosts on GPU buffers is cut into step kernels (host_proxy.hpp). A call is a
// sequence of halves: every piece's inputs (copied into the staging, then released to the
// piece's host part), then every piece's outputs (waited for, then copied back). The halves go,
// in that order, into as few kernels as hold them: a kernel has room for a bounded number of
// parts and of copies (its argument block is bounded), so a half with more copies than that
// spans kernels, the first of them waiting (outputs) and the last releasing (inputs). Most calls
// are one kernel, whatever their size: one launch. Host-only; unit-tested on the CPU.
#pragma once

#include <cstddef>
#include <vector>

namespace rcclx::gpu {

/// How many copies a piece's inputs and its outputs take.
struct PieceCopies {
  size_t inputs = 0;
  size_t outputs = 0;
};

/// What one kernel does of a half: copies [first, first + count) of its piece's inputs or
/// outputs, after waiting for the piece's host part (`waits`) or before releasing its inputs
/// (`releases`).
struct StepPart {
  size_t piece = 0;
  bool outputs = false;
  size_t first = 0;
  size_t count = 0;
  bool waits = false;
  bool releases = false;
};

/// The kernels of a call of `pieces`, each at most `maxParts` parts and `maxCopies` copies
/// (both at least 1), in stream order.
std::vector<std::vector<StepPart>> planProxySteps(const std::vector<PieceCopies>& pieces,
                                                  size_t maxParts, size_t maxCopies);

}  // namespace rcclx::gpu
