// HostLowPrecision: the low-precision (FP8 on the wire) collectives on host buffers, each one
// of the lp_*.cpp algorithms over the communicator's channels. The decision to run one is
// lp::planLowPrecision's (lp/lp_policy.hpp), made by the host back-end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lp/lp_policy.hpp"
#include "rcclx/types.hpp"

namespace rcclx {
class Channels;
}

namespace rcclx::lp {

struct LpWorkspace;

class HostLowPrecision {
 public:
  /// `eager`: allocate the scratch now (a knob enables low precision for some collective);
  /// otherwise the first call allocates it.
  HostLowPrecision(Channels& channels, bool eager);
  ~HostLowPrecision();

  /// Throws InvalidArgument naming `what` when `blockElems` does not fit the channel slots.
  void checkFits(size_t blockElems, const char* what) const;

  void allReduce(const LpPlan& plan, const void* send, void* recv, size_t count, DataType type,
                 RedOp op, uint64_t tag);
  void reduceScatterV(const LpPlan& plan, const void* send, void* recv,
                      const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                      DataType type, RedOp op, uint64_t tag);
  void allGatherV(const LpPlan& plan, const void* send, void* recv,
                  const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                  DataType type, uint64_t tag);
  void allToAll(const LpPlan& plan, const void* send, void* recv, size_t countPerRank,
                DataType type, uint64_t tag);

 private:
  LpWorkspace& workspace();

  Channels& channels_;
  std::unique_ptr<LpWorkspace> workspace_;
};

}  // namespace rcclx::lp
