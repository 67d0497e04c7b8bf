// rcclx_core/src/device/proxy_step_plan.hpp: how a GPU call across hosts is cut into step
// kernels. Every plan is checked against what the kernels rely on: the halves in stream order
// (every piece's inputs, then every piece's outputs), each half's copies covered once and in
// order, the wait on a half's first part and the release on its last, and each kernel within
// its bounds.
#include <cstddef>
#include <vector>

#include "check.hpp"
#include "device/proxy_step_plan.hpp"

using rcclx::gpu::PieceCopies;
using rcclx::gpu::planProxySteps;
using rcclx::gpu::StepPart;

namespace {

using Plan = std::vector<std::vector<StepPart>>;

/// Checks `plan` for `pieces` under the bounds; returns the parts in order.
std::vector<StepPart> checkPlan(const Plan& plan, const std::vector<PieceCopies>& pieces,
                                size_t maxParts, size_t maxCopies) {
  std::vector<StepPart> parts;
  for (const auto& kernel : plan) {
    CHECK(!kernel.empty());
    CHECK(kernel.size() <= maxParts);
    size_t copies = 0;
    for (const StepPart& p : kernel) copies += p.count;
    CHECK(copies <= maxCopies);
    parts.insert(parts.end(), kernel.begin(), kernel.end());
  }
  size_t at = 0;
  for (int outputs = 0; outputs < 2; ++outputs) {
    for (size_t piece = 0; piece < pieces.size(); ++piece) {
      const size_t n = outputs ? pieces[piece].outputs : pieces[piece].inputs;
      size_t covered = 0;
      const size_t firstPart = at;
      do {
        CHECK(at < parts.size());
        if (at >= parts.size()) return parts;
        const StepPart& p = parts[at++];
        CHECK_EQ(p.piece, piece);
        CHECK_EQ(p.outputs, outputs == 1);
        CHECK_EQ(p.first, covered);
        CHECK_EQ(p.waits, outputs == 1 && at - 1 == firstPart);
        covered += p.count;
        CHECK_EQ(p.releases, outputs == 0 && covered == n);
      } while (covered < n);
      CHECK_EQ(covered, n);
    }
  }
  CHECK_EQ(at, parts.size());
  return parts;
}

}  // namespace

TEST_CASE("proxy steps: a call in one piece is one kernel that releases, then waits") {
  const std::vector<PieceCopies> pieces{{1, 1}};
  const Plan plan = planProxySteps(pieces, 32, 80);
  CHECK_EQ(plan.size(), size_t{1});
  const auto parts = checkPlan(plan, pieces, 32, 80);
  CHECK_EQ(parts.size(), size_t{2});
}

TEST_CASE("proxy steps: a pipelined all_reduce is one kernel, every release before every wait") {
  const std::vector<PieceCopies> pieces(16, PieceCopies{1, 1});
  const Plan plan = planProxySteps(pieces, 32, 80);
  CHECK_EQ(plan.size(), size_t{1});
  const auto parts = checkPlan(plan, pieces, 32, 80);
  CHECK_EQ(parts.size(), size_t{32});
}

TEST_CASE("proxy steps: a half without copies still waits or releases") {
  const std::vector<PieceCopies> pieces{{0, 2}, {3, 0}};
  const Plan plan = planProxySteps(pieces, 32, 80);
  CHECK_EQ(plan.size(), size_t{1});
  const auto parts = checkPlan(plan, pieces, 32, 80);
  CHECK_EQ(parts.size(), size_t{4});
  CHECK(parts[0].releases && parts[0].count == 0);
  CHECK(parts[3].waits && parts[3].count == 0);
}

TEST_CASE("proxy steps: more copies than a kernel holds span kernels, in order") {
  // An all_gather of 16 pieces from 9 ranks: each piece one input and nine outputs.
  const std::vector<PieceCopies> pieces(16, PieceCopies{1, 9});
  const Plan plan = planProxySteps(pieces, 32, 80);
  CHECK_EQ(plan.size(), size_t{2});  // 160 copies in 32 parts and a split one
  checkPlan(plan, pieces, 32, 80);
  // A half larger than a kernel: its first part waits, the others follow it on the stream.
  const std::vector<PieceCopies> wide{{5, 7}};
  const Plan split = planProxySteps(wide, 32, 3);
  CHECK_EQ(split.size(), size_t{4});  // 3 | 2 + 1 | 3 | 3
  checkPlan(split, wide, 32, 3);
}

TEST_CASE("proxy steps: the part bound starts a new kernel too") {
  const std::vector<PieceCopies> pieces(5, PieceCopies{1, 1});
  for (size_t maxParts : {1, 2, 3, 7}) {
    const Plan plan = planProxySteps(pieces, maxParts, 80);
    CHECK_EQ(plan.size(), (10 + maxParts - 1) / maxParts);
    checkPlan(plan, pieces, maxParts, 80);
  }
}
