// A communicator's life after creation: queries, ncclCommGetAsyncError, finalize, revoke, and
// the one release path of ncclCommDestroy and ncclCommAbort.
#include "api.hpp"
#include "comm.hpp"
#include "groups.hpp"
#include "rma.hpp"

namespace rcclx::nccl {
namespace {

/// Hands a member's core communicator to be destroyed with the clique's others (null for one
/// already released, e.g. aborted); the last member to arrive destroys them all at once.
void releaseInClique(LocalClique& clique, std::unique_ptr<rcclx::Communicator> core) {
  std::vector<std::unique_ptr<rcclx::Communicator>> cores;
  {
    std::lock_guard<std::mutex> lock(clique.mu);
    if (core) clique.toDestroy.push_back(std::move(core));
    if (--clique.outstanding > 0) return;
    cores = std::move(clique.toDestroy);
  }
  std::vector<std::function<void()>> destroys;
  for (auto& c : cores) destroys.emplace_back([&c] { c->destroy(); });
  groups::runTogether(destroys);
}

/// Destroys (collectively) or aborts the core communicator; the handle stays as a tombstone.
void release(ncclComm_t comm, bool abort) {
  ncclComm* c = checkHandle(comm);
  {
    // A non-blocking initialisation still running is waited for: it may hold the bootstrap.
    std::lock_guard<std::mutex> lock(c->initMu);
    if (c->initThread.joinable()) c->initThread.join();
  }
  // Waits for a call in progress on another thread (ncclCommAbort from a watchdog thread).
  std::lock_guard<std::mutex> lock(c->callMu);
  const CommState s = c->state.load(std::memory_order_acquire);
  CTRAN_CHECK(s != CommState::kDestroyed, ctran::InvalidUsage,
              "comm was already destroyed or aborted");
  CTRAN_CHECK(s != CommState::kInitializing, ctran::InvalidUsage,
              "comm's initialisation is recorded in the open group; end the group "
              "first");
  // Calls recorded in an open group run at its ncclGroupEnd: destroying the communicator now
  // would drop them, so it is refused and the communicator stays usable. An abort drops them
  // on purpose.
  CTRAN_CHECK(abort || !c->core || c->core->destroyed() || !c->core->inGroup(), ctran::InvalidUsage,
              "comm has calls recorded in an open group (ncclGroupStart) that "
              "run at its ncclGroupEnd; call ncclGroupEnd first, then ncclCommDestroy");
  // The one-sided channel and mirrors are ctran windows of the core's group: released first.
  if (c->rma) c->rma->destroy();
  c->rma.reset();
  auto core = std::move(c->core);
  c->state.store(CommState::kDestroyed, std::memory_order_release);
  c->redOps.clear();
  c->keepAlive.reset();
  if (!core || core->destroyed()) core.reset();
  if (core && abort) core->abort();
  if (core && !abort && !c->clique) core->destroy();
  if (c->clique) releaseInClique(*c->clique, abort ? nullptr : std::move(core));
  c->clique.reset();
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;
using rcclx::nccl::CommUse;

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return boundary("ncclCommDestroy", [&] { rcclx::nccl::release(comm, false); });
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return boundary("ncclCommAbort", [&] { rcclx::nccl::release(comm, true); });
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  return boundary("ncclCommFinalize", [&] { CommUse(comm, false)->finalize(); }, comm);
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return boundary("ncclCommRevoke", [&] {
    CTRAN_CHECK(revokeFlags == 0, ctran::InvalidArgument, "revokeFlags ", revokeFlags,
                " must be 0 (NCCL_REVOKE_DEFAULT)");
    CommUse use(comm, false);
    use.handle().state.store(CommState::kRevoked, std::memory_order_release);
  });
}

NCCL_API(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  // Only atomics are read: it never waits, whatever another thread does with the communicator.
  return boundary("ncclCommGetAsyncError", [&] {
    ncclComm* c = rcclx::nccl::checkHandle(comm);
    CTRAN_CHECK(asyncError != nullptr, ctran::InvalidArgument, "asyncError is NULL");
    switch (c->state.load(std::memory_order_acquire)) {
      case CommState::kInitializing: *asyncError = ncclInProgress; return;
      case CommState::kInitFailed: *asyncError = c->initResult; return;
      case CommState::kDestroyed:
        throw ctran::InvalidUsage("comm was already destroyed or aborted");
      default:
        *asyncError = static_cast<ncclResult_t>(c->asyncError.load(std::memory_order_relaxed));
        // A failure on any rank (a dead peer, a timeout, a peer's abort) shows here too, as
        // torch's watchdog polls it, before this rank's next call would raise it.
        // Logged once; every polling thread gets it as its last error (ncclGetLastError).
        if (c->failure) {
          if (auto failure = c->failure->current()) {
            const std::string message = failure->message();
            int none = ncclSuccess;
            if (c->asyncError.compare_exchange_strong(none, ncclRemoteError)) {
              rcclx::nccl::fail("ncclCommGetAsyncError", ncclRemoteError, message.c_str());
            } else {
              rcclx::nccl::recordLastError("ncclCommGetAsyncError", message.c_str());
            }
            *asyncError = static_cast<ncclResult_t>(c->asyncError.load());
          }
        }
    }
  });
}

NCCL_API(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return boundary("ncclCommCount", [&] {
    const ncclComm& c = rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(count != nullptr, ctran::InvalidArgument, "count is NULL");
    *count = c.nranks;
  });
}

NCCL_API(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return boundary("ncclCommCuDevice", [&] {
    const ncclComm& c = rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(device != nullptr, ctran::InvalidArgument, "device is NULL");
    *device = c.device;
  });
}

NCCL_API(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return boundary("ncclCommUserRank", [&] {
    const ncclComm& c = rcclx::nccl::readyHandle(comm);
    CTRAN_CHECK(rank != nullptr, ctran::InvalidArgument, "rank is NULL");
    *rank = c.rank;
  });
}
