// LowPrecision: a communicator's low-precision (FP8 on the wire) collectives. The communicator
// asks plan() for each eligible call (on the caller's thread, so a bad knob is raised there);
// a plan runs one of the lp_*.cpp algorithms over the communicator's channels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lp/lp_policy.hpp"
#include "rcclx/types.hpp"

namespace ctran {
class PeerGroup;
}
namespace rcclx {
class Channels;
}

namespace rcclx::lp {

struct LpWorkspace;
class GpuLowPrecision;

/// What plan() decided for one call: the quantizer's block size, fixed at planning.
struct LpPlan {
  size_t blockElems = 0;
};

class LowPrecision {
 public:
  /// Allocates the host scratch now when a knob enables low precision for any collective;
  /// otherwise the first call forced by low_precision=True allocates it.
  LowPrecision(Channels& channels, int nranks);
  ~LowPrecision();

  /// The communicator has GPU `device` (collective): allocates the device staging now when a
  /// knob enables low precision for any collective; otherwise the first GPU call that asks for
  /// it allocates it (collectively, so every rank must ask; not during graph capture).
  void attachGpu(ctran::PeerGroup& group, int device);
  /// Releases the device staging (collective unless `collective` is false, as for abort).
  void destroyGpu(bool collective);

  /// The decision for one call (knobs read now), logged at INFO when low precision was asked
  /// for (used, or fallen back with the reason). nullopt: run in full precision.
  /// `what` names the call in the log ("all_reduce #12"); bytes as in LpRequest.
  std::optional<LpPlan> plan(LpCollective collective, const std::string& what, size_t bytes,
                             DataType type, RedOp op, std::optional<bool> hint,
                             bool onDevice = false) const;

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

  // The same on GPU buffers, enqueued on `stream` (after attachGpu()).
  void allReduceOnDevice(const LpPlan& plan, const void* send, void* recv, size_t count,
                         DataType type, RedOp op, void* stream);
  void reduceScatterVOnDevice(const LpPlan& plan, const void* send, void* recv,
                              const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                              DataType type, RedOp op, void* stream);
  void allGatherVOnDevice(const LpPlan& plan, const void* send, void* recv,
                          const std::vector<size_t>& counts, const std::vector<size_t>& displs,
                          DataType type, void* stream);
  void allToAllOnDevice(const LpPlan& plan, const void* send, void* recv, size_t countPerRank,
                        DataType type, void* stream);

 private:
  LpWorkspace& workspace();
  GpuLowPrecision& gpu(void* stream, const char* what);

  Channels& channels_;
  int nranks_;
  std::unique_ptr<LpWorkspace> workspace_;
  ctran::PeerGroup* group_ = nullptr;
  int device_ = -1;
  std::unique_ptr<GpuLowPrecision> gpu_;
};

}  // namespace rcclx::lp
