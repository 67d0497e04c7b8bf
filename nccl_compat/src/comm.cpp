// The handle checks every entry point makes before it reaches the core communicator.
#include "comm.hpp"

#include "api.hpp"
#include "groups.hpp"

namespace rcclx::nccl {

ncclComm* checkHandle(ncclComm_t comm, const char* what) {
  CTRAN_CHECK(comm != nullptr, ctran::InvalidArgument, what, " is NULL");
  CTRAN_CHECK(comm->magic == ncclComm::kMagic, ctran::InvalidArgument, what, " (",
              static_cast<const void*>(comm),
              ") is not a communicator made by this library (corrupt or foreign handle)");
  return comm;
}

void formClique(const std::vector<ncclComm*>& members) {
  if (members.size() < 2) return;
  auto clique = std::make_shared<LocalClique>();
  clique->outstanding = static_cast<int>(members.size());
  for (ncclComm* c : members) c->clique = clique;
}

void awaitInit(ncclComm* c) {
  if (c->state.load(std::memory_order_acquire) == CommState::kInitializing) {
    std::lock_guard<std::mutex> lock(c->initMu);
    if (c->initThread.joinable()) {
      c->initThread.join();
    } else if (c->state.load(std::memory_order_acquire) == CommState::kInitializing) {
      throw ctran::InvalidUsage(
          "comm's initialisation is recorded in the open group and runs at its "
          "ncclGroupEnd; end the group first");
    }
  }
  if (c->state.load(std::memory_order_acquire) == CommState::kInitFailed)
    throw ctran::Error(static_cast<ctran::Result>(c->initResult),
                       "comm's initialisation failed: " + c->initMessage);
}

const ncclComm& readyHandle(ncclComm_t comm) {
  ncclComm* c = checkHandle(comm);
  awaitInit(c);
  CTRAN_CHECK(c->state.load(std::memory_order_acquire) != CommState::kDestroyed,
              ctran::InvalidUsage, "comm was already destroyed or aborted");
  return *c;
}

CommUse::CommUse(ncclComm_t comm, bool joinGroup) : comm_(checkHandle(comm)) {
  awaitInit(comm_);
  lock_ = std::unique_lock<std::mutex>(comm_->callMu);
  // Checked under the lock: ncclCommAbort from another thread may have released it meanwhile.
  switch (comm_->state.load(std::memory_order_acquire)) {
    case CommState::kReady: break;
    case CommState::kRevoked:
      throw ctran::InvalidUsage(
          "comm was revoked (ncclCommRevoke); only "
          "ncclCommDestroy and ncclCommAbort are accepted");
    default:
      throw ctran::InvalidUsage(
          "comm was already destroyed or aborted (ncclCommDestroy / ncclCommAbort)");
  }
  CTRAN_CHECK(!comm_->suspended.load(std::memory_order_acquire), ctran::InvalidUsage,
              "comm is suspended (ncclCommSuspend): call ncclCommResume first");
  core_ = comm_->core.get();
  if (joinGroup && groups::active()) groups::enrol(comm_);
}

void noteAsyncError(ncclComm_t comm, ncclResult_t result) noexcept {
  if (comm == nullptr || comm->magic != ncclComm::kMagic) return;
  if (result != ncclSystemError && result != ncclInternalError && result != ncclRemoteError &&
      result != ncclUnhandledCudaError)
    return;
  int expected = ncclSuccess;
  comm->asyncError.compare_exchange_strong(expected, result);
}

}  // namespace rcclx::nccl
