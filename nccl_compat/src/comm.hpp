// The ncclComm_t handle: what the C ABI keeps per communicator around rcclx::Communicator, and
// CommUse, the one way an entry point reaches the core communicator.
//
// A handle is never freed: ncclCommDestroy / ncclCommAbort release the core communicator and
// leave the handle as a tombstone, so a call on a destroyed communicator returns
// ncclInvalidUsage naming it instead of reading freed memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "rcclx/communicator.hpp"
#include "rcclx/types.hpp"

/// Where a handle is in its life.
enum class CommState : int {
  kInitializing = 0,  ///< a non-blocking or grouped initialisation has not finished
  kReady = 1,
  kInitFailed = 2,  ///< initialisation failed; initResult / initMessage say why
  kRevoked = 3,     ///< ncclCommRevoke: only destroy / abort are accepted
  kDestroyed = 4,   ///< released by ncclCommDestroy or ncclCommAbort
};

/// One ncclRedOpCreatePreMulSum operator of a communicator (handle ncclNumOps + index).
struct PreMulSumOp {
  bool live = false;
  rcclx::DataType type = rcclx::DataType::kFloat32;
  double scalar = 1.0;
};

struct ncclComm;

namespace rcclx::nccl {
class Rma;
}

/// Communicators of one clique made by one thread (ncclCommInitAll, or several ncclCommInitRank
/// in one group). Destroying a GPU communicator is collective (a barrier among its ranks), so
/// their destroys, which that thread makes one after another, are held back until every
/// member asked, then run together.
struct LocalClique {
  std::mutex mu;
  int outstanding = 0;  ///< members not yet destroyed or aborted
  std::vector<std::unique_ptr<rcclx::Communicator>> toDestroy;
};

struct ncclComm {
  static constexpr uint64_t kMagic = 0x524343'4c584e43ull;  // "RCCLXNC"
  uint64_t magic = kMagic;

  std::atomic<CommState> state{CommState::kInitializing};
  /// The first asynchronous failure (ncclCommGetAsyncError), ncclSuccess while there is none.
  std::atomic<int> asyncError{ncclSuccess};
  /// Held by every call that uses `core` (a communicator is used by one thread at a time, so
  /// it is contended only by ncclCommAbort from another thread).
  std::mutex callMu;

  std::unique_ptr<rcclx::Communicator> core;
  /// The core's failure record, kept apart so ncclCommGetAsyncError reads it without `core`
  /// (which ncclCommAbort may be releasing on another thread).
  std::shared_ptr<ctran::GroupFailure> failure;
  int rank = -1;
  int nranks = 0;
  int device = -1;  ///< the GPU, or -1 for a host-memory communicator
  bool blocking = true;
  std::string name;  ///< ncclConfig_t::commName, for log lines
  /// What must outlive the communicator: rank 0's bootstrap store under NCCL_COMM_ID.
  std::shared_ptr<void> keepAlive;
  std::vector<PreMulSumOp> redOps;
  std::shared_ptr<LocalClique> clique;  ///< set when one thread made this and its peers
  /// One-sided calls on host-memory windows (rma.hpp): made by the first host-memory
  /// ncclCommWindowRegister.
  std::shared_ptr<rcclx::nccl::Rma> rma;
  /// The core's one-sided GPU signals are open (the first device-memory ncclCommWindowRegister
  /// opens them); the core releases them with the communicator.
  bool gpuSignals = false;
  /// Between ncclCommSuspend and ncclCommResume (CommUse refuses the communicator meanwhile).
  std::atomic<bool> suspended{false};
  /// ncclCommGetUniqueId's id, until an ncclCommGrow on this rank consumes it.
  std::optional<ncclUniqueId> growId;

  // Initialisation outside the caller's thread (non-blocking config or a group).
  std::mutex initMu;
  std::thread initThread;  ///< the non-blocking initialisation, joined by the first user
  ncclResult_t initResult = ncclSuccess;
  std::string initMessage;
};

namespace rcclx::nccl {

/// `comm`, after checking it is a handle of this library (InvalidArgument naming `what` for
/// NULL or anything else).
ncclComm* checkHandle(ncclComm_t comm, const char* what = "comm");

/// Makes `members` (ready handles of one clique, made by this thread) a LocalClique.
void formClique(const std::vector<ncclComm*>& members);

/// Waits for a non-blocking initialisation of `c` to finish (returns at once otherwise).
/// Throws InvalidUsage when it is recorded in this thread's open group (it runs at
/// ncclGroupEnd), and the initialisation's own error when it failed.
void awaitInit(ncclComm* c);

/// A handle's fields for the query functions: ready (after waiting for a non-blocking
/// initialisation), not yet destroyed (a revoked one is still read).
const ncclComm& readyHandle(ncclComm_t comm);

/// The core communicator of `comm`, locked for one call: checks the handle, waits for a
/// non-blocking initialisation, rejects destroyed, aborted and revoked communicators with
/// InvalidUsage, and (`joinGroup`) enrols the communicator in this thread's open group.
class CommUse {
 public:
  explicit CommUse(ncclComm_t comm, bool joinGroup = true);
  rcclx::Communicator* operator->() const { return core_; }
  rcclx::Communicator& operator*() const { return *core_; }
  ncclComm& handle() const { return *comm_; }

 private:
  ncclComm* comm_;
  std::unique_lock<std::mutex> lock_;
  rcclx::Communicator* core_ = nullptr;
};

}  // namespace rcclx::nccl
