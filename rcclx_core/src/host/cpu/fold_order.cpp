// Implementation of fold_order.hpp.
#include "host/cpu/fold_order.hpp"

#include "ctran/checks.hpp"
#include "host/cpu/reduce.hpp"
#include "host/p2p/host_layout.hpp"

namespace rcclx {

FoldOrder FoldOrder::of(const HostLayout& layout) {
  FoldOrder order;
  if (layout.nHosts() > 1) order.runs_ = layout.ranksOf;
  return order;
}

void FoldOrder::fold(void* dst, const void* const* srcs, int n, size_t count, DataType type,
                     RedOp op) const {
  if (runs_.empty()) {
    cpu::reduceMany(dst, srcs, n, count, type, op);
    return;
  }
  const size_t bytes = count * dataTypeSize(type);
  // Per thread: host work of one communicator runs on its executor thread, chunk by chunk.
  thread_local std::vector<char> partials;
  if (partials.size() < runs_.size() * bytes) partials.resize(runs_.size() * bytes);
  std::vector<const void*> hostSums(runs_.size());
  std::vector<const void*> members;
  for (size_t h = 0; h < runs_.size(); ++h) {
    const auto& ranks = runs_[h];
    if (ranks.size() == 1) {
      hostSums[h] = srcs[ranks[0]];
      continue;
    }
    members.clear();
    for (int r : ranks) {
      CTRAN_ASSERT(r < n, "fold over ", n, " sources names rank ", r);
      members.push_back(srcs[r]);
    }
    char* sum = partials.data() + h * bytes;
    cpu::reduceMany(sum, members.data(), static_cast<int>(members.size()), count, type, op);
    hostSums[h] = sum;
  }
  cpu::reduceMany(dst, hostSums.data(), static_cast<int>(hostSums.size()), count, type, op);
}

}  // namespace rcclx
