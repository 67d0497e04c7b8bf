// Communicator: a rank's membership in a group that runs collectives together; the one front
// door every front end (Python, the NCCL C ABI, the torch backends) calls.
//
// Semantics follow NCCL's: every rank calls the same collectives in the same order with
// matching counts and datatypes; buffers may alias (in place) where NCCL allows it. Each call
// takes Buffers (rcclx/buffer.hpp): the communicator checks them once (placement, types,
// counts, roots) and throws InvalidArgument naming the argument and its value, then runs the
// call where its buffers live:
// - host buffers: on the caller's thread, or with CallOptions::async on the communicator's
//   worker thread in submission order; an async call returns a Work, a synchronous one nullptr
//   once done;
// - GPU buffers (a communicator created with a device): ranks on one host, one kernel
//   enqueued on CallOptions::stream, returning nullptr at once (the stream orders it, as with
//   NCCL); ranks on several hosts, the host collective on pinned copies, returning once it
//   finished, its copies back enqueued on the stream (device/staged_backend.hpp). Device calls
//   of one communicator must be ordered (one stream, or events between).
// Allreduce results are bitwise identical on every rank for every algorithm. Inside a group
// calls are recorded and run by groupEnd(). A communicator is not safe to call from several
// threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ctran/bootstrap.hpp"
#include "ctran/failure.hpp"
#include "ctran/topology.hpp"
#include "rcclx/buffer.hpp"
#include "rcclx/comm_config.hpp"
#include "rcclx/dynamic_splits.hpp"
#include "rcclx/types.hpp"
#include "rcclx/work.hpp"

namespace ctran {
class Window;
}

namespace rcclx {

struct CommunicatorTesting;

class Communicator {
 public:
  /// Collective over the bootstrap's ranks: reads the configuration (environment + hints),
  /// connects transports and allocates every buffer the collectives need; with a device, also
  /// the GPU staging on it (ranks on one host only). Every rank fails alike on a bad knob.
  explicit Communicator(std::unique_ptr<ctran::Bootstrap> bootstrap, const CommConfig& config = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const ctran::Topology& topology() const;
  /// True when the DDA algorithms can run on host buffers (all ranks on this host).
  bool directAccess() const;
  /// The GPU this communicator's device calls run on, or -1.
  int device() const;

  /// recv = op over ranks of send (equal counts and types; recv may be send).
  WorkPtr allReduce(const Buffer& send, const Buffer& recv, RedOp op, const CallOptions& opts = {});
  /// recv (root only; other ranks' recv is ignored) = op over ranks of send.
  WorkPtr reduce(const Buffer& send, const Buffer& recv, RedOp op, int root,
                 const CallOptions& opts = {});
  /// recv = root's send (send is read on the root only).
  WorkPtr broadcast(const Buffer& send, const Buffer& recv, int root, const CallOptions& opts = {});
  /// recv holds size() blocks of send.count elements, in rank order.
  WorkPtr allGather(const Buffer& send, const Buffer& recv, const CallOptions& opts = {});
  /// recv holds block r of recvCounts[r] elements, packed in rank order.
  WorkPtr allGatherV(const Buffer& send, const Buffer& recv, const std::vector<size_t>& recvCounts,
                     const CallOptions& opts = {});
  /// send holds size() blocks of recv.count elements; block r, reduced, lands on rank r.
  WorkPtr reduceScatter(const Buffer& send, const Buffer& recv, RedOp op,
                        const CallOptions& opts = {});
  /// send holds block r of counts[r] elements, packed in rank order; recv has counts[rank()].
  WorkPtr reduceScatterV(const Buffer& send, const Buffer& recv, const std::vector<size_t>& counts,
                         RedOp op, const CallOptions& opts = {});
  /// Block p of send (send.count / size() elements) goes to rank p, into its block rank().
  WorkPtr allToAll(const Buffer& send, const Buffer& recv, const CallOptions& opts = {});
  /// Counts and displacements in elements, one per rank (empty displacements: packed).
  WorkPtr allToAllV(const Buffer& send, const Buffer& recv, const std::vector<size_t>& sendCounts,
                    const std::vector<size_t>& sendDispls, const std::vector<size_t>& recvCounts,
                    const std::vector<size_t>& recvDispls, const CallOptions& opts = {});
  /// All-to-all-v whose counts are data (rcclx/dynamic_splits.hpp): sendSplits[p] rows of
  /// send go to rank p; the counts are exchanged by the call itself, and recvSplits (and
  /// recvOffsets) are written with what arrived, block p at the exclusive prefix sum of the
  /// counts from ranks below p. The capacity is the output's rows (at most maxRecvRows):
  /// rows past it are not written, and the call fails with InvalidArgument naming the sender,
  /// the receiver and the counts (host buffers: this call or its Work; GPU buffers: the
  /// rank's next alltoallv_dynamic call, after enqueueing itself). Negative counts, or blocks past
  /// the input's rows, are InvalidArgument on every rank. GPU buffers: device code only, capturable
  /// in a CUDA graph (replays read the counts anew).
  WorkPtr allToAllvDynamic(const Buffer& send, const Buffer& recv, const DynamicSplits& splits,
                           const CallOptions& opts = {});
  /// Raises (InvalidArgument) what this rank's earlier allToAllvDynamic calls on GPU buffers
  /// recorded, an overflow or invalid counts, and clears it, so the next call does not raise it
  /// again. Call it once the kernels finished (after a stream or event synchronisation): the
  /// checked mode of the torch layer's work.wait(). Host buffers raise from the call itself.
  void checkAllToAllvDynamic();
  /// recv (root only) holds size() blocks of send.count elements.
  WorkPtr gather(const Buffer& send, const Buffer& recv, int root, const CallOptions& opts = {});
  /// send (root only) holds size() blocks of recv.count elements.
  WorkPtr scatter(const Buffer& send, const Buffer& recv, int root, const CallOptions& opts = {});
  /// Point to point: matched with the peer's recv / send of the same size, in call order.
  WorkPtr send(const Buffer& buf, int peer, const CallOptions& opts = {});
  WorkPtr recv(const Buffer& buf, int peer, const CallOptions& opts = {});
  /// Returns once every rank reached it; with CallOptions::stream, a kernel on that stream.
  WorkPtr barrier(const CallOptions& opts = {});

  /// Between groupStart() and groupEnd(), calls are recorded, then run together by groupEnd()
  /// (collectives in order, then all sends and receives progressed at once; device calls
  /// enqueued there, the sends and receives together on the stream of the first). Groups nest.
  void groupStart();
  WorkPtr groupEnd(bool async = false);
  /// Leaves every open level of the group and drops what it recorded: none of its calls runs
  /// (a call of it failed, or the caller gave up on it). Does nothing outside a group. Every
  /// rank should cancel the same group: a peer whose group ran waits for this rank's calls
  /// until its timeout.
  void groupCancel();
  /// True between groupStart() and the matching outermost groupEnd().
  bool inGroup() const;

  /// Collective over this communicator: ranks passing the same color form a new communicator,
  /// ordered by (key, rank), with this one's configuration and `hints` (knob name -> value, in
  /// any case) overriding its knobs; a negative color returns nullptr.
  std::unique_ptr<Communicator> split(int color, int key,
                                      const std::map<std::string, std::string>& hints = {});
  /// Collective: the listed ranks (in that order) form a new communicator; others get nullptr.
  std::unique_ptr<Communicator> splitRanks(const std::vector<int>& ranks);
  /// Collective over the listed ranks only (in that order; every one of them passes the same
  /// list): they form a new communicator with this one's configuration, while the others
  /// need not take part (they may have failed: NCCL's ncclCommShrink). A rank not listed gets
  /// nullptr without any collective step. Listed ranks whose lists differ all throw
  /// InvalidArgument naming two of the lists, and nothing is built.
  std::unique_ptr<Communicator> shrink(const std::vector<int>& ranks);

  /// Collective: `bytes` of device memory on this rank's GPU that every rank maps (a symmetric
  /// buffer; every rank passes the same size). An allreduce whose output lies in one, at the
  /// same offset on every rank, stores its all-gather straight into the peers' outputs. Lives
  /// until freeSymmetric() or destroy(). Throws InvalidUsage without a device, InvalidArgument
  /// for mismatched sizes.
  void* allocSymmetric(size_t bytes);
  /// Collective: makes `bytes` of this rank's own device memory at `ptr` (inside one
  /// cudaMalloc allocation on this GPU) a symmetric buffer mapped by every rank; the memory
  /// stays the caller's and must outlive the registration. Throws InvalidArgument (on every
  /// rank) for mismatched or zero sizes, memory that is not this GPU's, has no IPC handle or
  /// overlaps another symmetric buffer.
  void registerSymmetric(void* ptr, size_t bytes);
  /// Collective: frees a buffer allocSymmetric() returned, or deregisters one
  /// registerSymmetric() made (after this GPU's work is done).
  void freeSymmetric(void* ptr);

  /// One-sided calls between the ranks' GPUs (ranks on one host), each enqueued on a stream and
  /// capturable in a CUDA graph, with the memory model of ctran/device_rma.hpp: a put enqueues a
  /// copy into a peer's symmetric buffer, a signal a release of this rank's next sequence number
  /// to the peer, a wait a bounded acquire of a peer's signals. Work enqueued after a wait sees
  /// everything the peer enqueued before the signals it waited for, its puts into any symmetric
  /// buffer included. The signals are the communicator's (one per ordered pair of ranks, not one
  /// per buffer), counted on the GPU, so a graph replays with fresh numbers. One-sided calls of a
  /// communicator must be ordered on the device (one stream, or events between streams).
  ///
  /// Collective: opens the signals (once; later calls do nothing). Throws InvalidUsage without
  /// a device or across hosts, CudaError when the runtime fails.
  void openDeviceSignals();
  /// Enqueues on `stream` a copy of `bytes` from `src` (device memory) into `peer`'s symmetric
  /// buffer matching `buffer` (this rank's, as allocSymmetric returned or registerSymmetric
  /// took it), at byte `offset`, and this rank's next signal to `peer`, in one kernel (the
  /// signal covers everything before it on the stream too). InvalidArgument for another pointer
  /// or a range past the buffer, InvalidUsage before openDeviceSignals().
  void devicePutSignal(int peer, const void* buffer, size_t offset, const void* src, size_t bytes,
                       void* stream);
  /// Enqueues on `stream` this rank's next signal to `peer`, after everything before it there.
  void deviceSignal(int peer, void* stream);
  /// Enqueues on `stream` a wait for counts[p] more signals from each rank p (one count per
  /// rank), bounded by the communicator's RCCLX_TIMEOUT_MS: a wait past it ends without
  /// trapping and fails the signals, so every later one-sided call (this one too, once the
  /// kernel recorded it) throws a TimeoutError naming this rank, the peer, the signal expected
  /// and the one seen; collectives are unaffected, destroy() releases the signals as usual.
  void deviceWaitSignals(const std::vector<uint64_t>& counts, void* stream);

  /// Collective: a ctran window of `bytes` on every rank (every rank passes the same size)
  /// with `numSignals` signal slots, over this communicator's transports (shared memory
  /// between ranks of a host, tcp or ucx between hosts): one-sided put, signal and wait
  /// between its ranks, with the memory model of ctran/window.hpp. The caller owns it and
  /// destroys it before destroy() or abort().
  std::shared_ptr<ctran::Window> createWindow(size_t bytes, int numSignals);

  /// Device memory this communicator allocated for itself on this rank, in bytes (its staging
  /// and scratch; not the symmetric buffers allocSymmetric handed out); 0 without a GPU.
  size_t gpuMemoryBytes() const;

  /// Waits for all submitted host work.
  void finalize();
  /// Finalizes, then releases every resource (collective). A second call throws InvalidUsage.
  void destroy();
  /// Releases every resource without waiting for peers, and fails every peer's current wait
  /// (they raise a RemoteError naming this rank); later calls throw InvalidUsage.
  void abort();
  bool destroyed() const;
  /// Throws the RemoteError of a failure any rank reported (a dead peer, a timeout, including a
  /// GPU kernel's: what every later call raises); returns when there is none, at once. A GPU
  /// call's completion (a stream or event) does not say whether its kernels ended early on a
  /// failure: this does. Returns on a destroyed or aborted communicator.
  void checkFailed();
  /// The record of a failure of this communicator on any rank (a dead peer, a timeout, an
  /// abort), which every later call raises; it outlives the communicator, so another thread
  /// may poll it (`current()`) at any time, without blocking on the communicator.
  std::shared_ptr<ctran::GroupFailure> failureRecord() const;

  /// The communicator's state, defined privately (it holds the back-ends).
  struct Impl;

 private:
  friend struct CommunicatorTesting;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rcclx
