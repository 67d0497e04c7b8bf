// Communicator: a rank's membership in a group that runs collectives together.
//
// Semantics follow NCCL's: every rank calls the same collectives in the same order with
// matching counts and datatypes; counts are in elements; buffers may alias (in-place) where
// NCCL allows it. On the host, a call runs on the caller's thread (or, with
// CallOptions::async, on the communicator's worker thread, in submission order) and returns
// a Work handle. Allreduce results are bitwise identical on every rank for every algorithm.
// GPU buffers (every collective and send / recv, ranks on one host): a communicator created
// with a device allocates its device staging at creation; a call with CallOptions::onDevice
// enqueues one kernel on CallOptions::stream and returns at once (no Work: the stream orders
// it, as with NCCL). Inside a group, device collectives are enqueued at once; device sends and
// receives are recorded and enqueued together by groupEnd() (on the stream of the first).
// Device calls of one communicator must be ordered (one stream, or events between streams).
// A communicator is not safe to call from several threads at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "ctran/topology.hpp"
#include "../../src/selector.hpp"
#include "rcclx/types.hpp"
#include "rcclx/work.hpp"

namespace ctran {
class PeerGroup;
}

namespace rcclx {

namespace gpu {
class GpuAllReduce;
class GpuCollectives;
}  // namespace gpu
namespace lp {
class LowPrecision;
}
class Channels;
class DirectArena;
class Executor;
struct P2POp;

/// Per-call options.
struct CallOptions {
  bool async = false;         ///< return at once; the Work completes later
  std::string algo;           ///< allreduce only: force an algorithm ("" = RCCLX_ALLREDUCE_ALGO)
  double premulScalar = 1.0;  ///< PREMUL_SUM only: this rank's scalar
  bool onDevice = false;      ///< the buffers are on the communicator's GPU
  void* stream = nullptr;  ///< with onDevice: the cudaStream_t to enqueue on (null: legacy default)
  /// all_reduce, all_gather(_v), reduce_scatter(_v), all_to_all: true forces the FP8 wire format
  /// (ineligible calls still fall back), false forbids it, nullopt leaves it to the knobs
  /// (RCCL_LOW_PRECISION_ENABLE*, RCCLX_LP_MIN_BYTES).
  std::optional<bool> lowPrecision;
};

class Communicator {
 public:
  /// Collective over the bootstrap's ranks: connects transports and allocates every buffer
  /// the collectives need. With `device` >= 0 (every rank must pass one, or none), also
  /// allocates and maps the GPU staging on that GPU (ranks on one host only).
  explicit Communicator(std::unique_ptr<ctran::Bootstrap> bootstrap, int device = -1);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  const ctran::Topology& topology() const;
  /// True when the DDA algorithms can run (all ranks on this host, shared memory).
  bool directAccess() const { return arena_ != nullptr; }
  /// The GPU this communicator's device calls run on, or -1.
  int device() const { return device_; }

  WorkPtr allReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                    const CallOptions& opts = {});
  WorkPtr reduce(const void* send, void* recv, size_t count, DataType type, RedOp op, int root,
                 const CallOptions& opts = {});
  WorkPtr broadcast(const void* send, void* recv, size_t count, DataType type, int root,
                    const CallOptions& opts = {});
  /// recv holds size() blocks of sendCount elements, in rank order.
  WorkPtr allGather(const void* send, void* recv, size_t sendCount, DataType type,
                    const CallOptions& opts = {});
  /// recv holds block r of recvCounts[r] elements, packed in rank order.
  WorkPtr allGatherV(const void* send, size_t sendCount, void* recv,
                     const std::vector<size_t>& recvCounts, DataType type,
                     const CallOptions& opts = {});
  /// send holds size() blocks of recvCount elements; block r, reduced, lands on rank r.
  WorkPtr reduceScatter(const void* send, void* recv, size_t recvCount, DataType type, RedOp op,
                        const CallOptions& opts = {});
  /// send holds block r of counts[r] elements, packed in rank order.
  WorkPtr reduceScatterV(const void* send, void* recv, const std::vector<size_t>& counts,
                         DataType type, RedOp op, const CallOptions& opts = {});
  /// Block p of send (countPerRank elements) goes to rank p, into its block `rank()`.
  WorkPtr allToAll(const void* send, void* recv, size_t countPerRank, DataType type,
                   const CallOptions& opts = {});
  /// Counts and displacements in elements, one per rank.
  WorkPtr allToAllV(const void* send, const std::vector<size_t>& sendCounts,
                    const std::vector<size_t>& sendDispls, void* recv,
                    const std::vector<size_t>& recvCounts, const std::vector<size_t>& recvDispls,
                    DataType type, const CallOptions& opts = {});
  /// recv (root only) holds size() blocks of sendCount elements.
  WorkPtr gather(const void* send, void* recv, size_t sendCount, DataType type, int root,
                 const CallOptions& opts = {});
  /// send (root only) holds size() blocks of recvCount elements.
  WorkPtr scatter(const void* send, void* recv, size_t recvCount, DataType type, int root,
                  const CallOptions& opts = {});
  WorkPtr send(const void* buf, size_t count, DataType type, int peer,
               const CallOptions& opts = {});
  WorkPtr recv(void* buf, size_t count, DataType type, int peer, const CallOptions& opts = {});
  WorkPtr barrier(const CallOptions& opts = {});

  /// Between groupStart() and groupEnd(), calls are recorded, then run together by groupEnd()
  /// (collectives in order, then all sends and receives progressed at once). Groups nest.
  void groupStart();
  WorkPtr groupEnd(bool async = false);
  /// True between groupStart() and the matching outermost groupEnd().
  bool inGroup() const { return groupDepth_ > 0; }

  /// Collective over this communicator: ranks passing the same color form a new communicator,
  /// ordered by (key, rank); a negative color returns nullptr.
  std::unique_ptr<Communicator> split(int color, int key);
  /// Collective over this communicator: the listed ranks (in that order) form a new
  /// communicator; other ranks get nullptr.
  std::unique_ptr<Communicator> splitRanks(const std::vector<int>& ranks);

  /// The selector's choice for an allreduce of `bytes` here (for tests and tools).
  Selection selectAllReduce(size_t bytes, DataType type, RedOp op, const std::string& hint,
                            bool gpu = false) const;
  /// Collective: `bytes` of device memory on this rank's GPU that every rank of this
  /// communicator maps (a symmetric buffer; every rank passes the same size). An allreduce whose
  /// output lies in one, at the same offset on every rank, stores its all-gather straight into
  /// the peers' outputs instead of going through the staging. Lives until freeSymmetric() or
  /// destroy(). Throws InvalidUsage without a device, InvalidArgument for mismatched sizes.
  void* allocSymmetric(size_t bytes);
  /// Collective: makes `bytes` of this rank's own device memory at `ptr` (inside one
  /// cudaMalloc allocation on this GPU, e.g. a torch tensor's) a symmetric buffer, mapped by
  /// every rank; the memory stays the caller's and must outlive the registration. Released by
  /// freeSymmetric(ptr) or destroy(). Throws InvalidUsage without a device, InvalidArgument
  /// (on every rank) for mismatched or zero sizes, memory that is not this GPU's device memory,
  /// has no IPC handle (cuMemCreate memory) or overlaps another symmetric buffer.
  void registerSymmetric(void* ptr, size_t bytes);
  /// Collective: frees a buffer allocSymmetric() returned, or deregisters one
  /// registerSymmetric() made (after this GPU's work is done).
  void freeSymmetric(void* ptr);
  /// GPU allreduce calls so far that stored their all-gather straight into the peers' outputs
  /// (symmetric buffers, or outputs mapped while a graph was captured).
  uint64_t symmetricCalls() const;
  /// Outputs of captured GPU allreduces mapped on every rank for graphs still alive
  /// (RCCLX_GPU_GRAPH_REGISTER); the mappings of destroyed graphs are closed first.
  size_t graphRegistrations();

  /// Replaces the GPU kernels' launch shapes ("name=value,..."; see RCCLX_GPU_TUNING).
  void setGpuTuning(const std::string& spec);

  /// Waits for all submitted work.
  void finalize();
  /// Finalizes and releases every resource. A second call throws InvalidUsage.
  void destroy();
  /// Releases resources without waiting for peers; later calls throw InvalidUsage.
  void abort();
  bool destroyed() const { return destroyed_; }

 private:
  WorkPtr submit(const std::string& what, std::function<void()> fn, bool async);
  uint64_t nextTag(int kind);
  void checkUsable(const char* what) const;
  void checkRoot(int root, const char* what) const;
  /// For the symmetric-buffer calls (`what`): the GPU state, after checking the communicator is
  /// usable and has a device, with host work drained (they use the bootstrap).
  gpu::GpuAllReduce& symmetricBuffers(const char* what);
  void runAllReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                    const CallOptions& opts, uint64_t tag);
  /// The RCCLX_GPU_* knobs, read before any collective step.
  struct GpuSettings {
    size_t flatBytes = 0;
    size_t stagingBytes = 0;
    size_t linesBytes = 0;
    size_t channelBytes = 0;
    std::string tuning;
    bool graphRegister = true;
  };
  void initGpu(const GpuSettings& settings);
  /// The GPU path of the collectives other than allreduce; throws InvalidUsage naming `what`
  /// when the communicator has no device.
  gpu::GpuCollectives& gpuCollectives(const char* what) const;
  /// A send / recv on GPU buffers: enqueued now, or recorded for groupEnd() inside a group.
  /// Validates and runs (or records, inside a group) one send or receive.
  WorkPtr submitP2P(const P2POp& op, size_t count, const CallOptions& opts, const char* what);
  void deviceP2P(const P2POp& op, void* stream, const char* what);
  void runGpuAllReduce(const void* send, void* recv, size_t count, DataType type, RedOp op,
                       const CallOptions& opts);

  int rank_;
  int nranks_;
  std::unique_ptr<ctran::PeerGroup> group_;
  std::unique_ptr<Channels> channels_;
  std::unique_ptr<DirectArena> arena_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<lp::LowPrecision> lp_;
  int device_ = -1;
  std::unique_ptr<gpu::GpuAllReduce> gpu_;
  std::unique_ptr<gpu::GpuCollectives> gpuColl_;
  uint64_t collSeq_ = 0;
  uint64_t splitSeq_ = 0;
  int groupDepth_ = 0;
  std::vector<std::function<void()>> groupedCollectives_;
  std::vector<P2POp> groupedP2P_;
  std::vector<P2POp> groupedDeviceP2P_;  // device sends / receives of the open group
  void* groupedDeviceStream_ = nullptr;
  bool destroyed_ = false;
};

}  // namespace rcclx
