// Implementation of proxy_step_plan.hpp.
#include "device/proxy_step_plan.hpp"

#include <algorithm>

#include "ctran/checks.hpp"

namespace rcclx::gpu {

std::vector<std::vector<StepPart>> planProxySteps(const std::vector<PieceCopies>& pieces,
                                                  size_t maxParts, size_t maxCopies) {
  CTRAN_ASSERT(maxParts >= 1 && maxCopies >= 1, "a step kernel holds a part and a copy");
  std::vector<std::vector<StepPart>> kernels(1);
  size_t copies = 0;  // in the last kernel
  auto addHalf = [&](size_t piece, bool outputs, size_t n) {
    size_t first = 0;
    do {
      const bool full = kernels.back().size() == maxParts || (copies == maxCopies && n > first);
      if (full) {
        kernels.emplace_back();
        copies = 0;
      }
      const size_t count = std::min(n - first, maxCopies - copies);
      StepPart part;
      part.piece = piece;
      part.outputs = outputs;
      part.first = first;
      part.count = count;
      part.waits = outputs && first == 0;
      part.releases = !outputs && first + count == n;
      kernels.back().push_back(part);
      copies += count;
      first += count;
    } while (first < n);
  };
  for (size_t p = 0; p < pieces.size(); ++p) addHalf(p, false, pieces[p].inputs);
  for (size_t p = 0; p < pieces.size(); ++p) addHalf(p, true, pieces[p].outputs);
  return kernels;
}

}  // namespace rcclx::gpu
