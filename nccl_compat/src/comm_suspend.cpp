// ncclCommSuspend, ncclCommResume and ncclCommMemStats. Every byte of GPU memory an RCCLX
// communicator allocates (its staging windows and scratch) is mapped by its peers for its whole
// life, so none of it is suspendable: suspending stops the communicator's use and releases
// nothing, and the statistics say so (suspendable 0, persistent = total).
#include "api.hpp"
#include "comm.hpp"

namespace rcclx::nccl {
namespace {

/// A handle that is ready (suspended or not): what suspend, resume and the statistics accept.
ncclComm& liveHandle(ncclComm_t comm) {
  ncclComm* c = checkHandle(comm);
  awaitInit(c);
  const CommState s = c->state.load(std::memory_order_acquire);
  CTRAN_CHECK(s == CommState::kReady, ctran::InvalidUsage,
              "comm was revoked, destroyed or aborted, or its initialisation failed");
  return *c;
}

}  // namespace
}  // namespace rcclx::nccl

using rcclx::nccl::boundary;

NCCL_API(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags);
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) {
  return boundary(
      "ncclCommSuspend",
      [&] {
        CTRAN_CHECK((flags & ~NCCL_SUSPEND_MEM) == 0, ctran::InvalidArgument, "flags 0x", std::hex,
                    flags, std::dec, " has bits other than NCCL_SUSPEND_MEM (0x1)");
        ncclComm& c = rcclx::nccl::liveHandle(comm);
        std::lock_guard<std::mutex> lock(c.callMu);  // after any call in progress
        bool expected = false;
        CTRAN_CHECK(c.suspended.compare_exchange_strong(expected, true), ctran::InvalidUsage,
                    "comm is already suspended");
        if (c.core) c.core->finalize();  // its host work done before it rests
      },
      comm);
}

NCCL_API(ncclResult_t, ncclCommResume, ncclComm_t comm);
ncclResult_t ncclCommResume(ncclComm_t comm) {
  return boundary(
      "ncclCommResume",
      [&] {
        ncclComm& c = rcclx::nccl::liveHandle(comm);
        bool expected = true;
        CTRAN_CHECK(c.suspended.compare_exchange_strong(expected, false), ctran::InvalidUsage,
                    "comm is not suspended (ncclCommSuspend)");
      },
      comm);
}

NCCL_API(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) {
  return boundary(
      "ncclCommMemStats",
      [&] {
        CTRAN_CHECK(value != nullptr, ctran::InvalidArgument, "value is NULL");
        ncclComm& c = rcclx::nccl::liveHandle(comm);
        std::lock_guard<std::mutex> lock(c.callMu);
        const uint64_t held = c.core ? c.core->gpuMemoryBytes() : 0;
        switch (stat) {
          case ncclStatGpuMemSuspend: *value = 0; return;
          case ncclStatGpuMemSuspended: *value = c.suspended.load() ? 1 : 0; return;
          case ncclStatGpuMemPersist:
          case ncclStatGpuMemTotal: *value = held; return;
        }
        throw ctran::InvalidArgument(ctran::strCat(
            "stat ", static_cast<int>(stat),
            " is not an ncclCommMemStat_t (ncclStatGpuMemSuspend .. ncclStatGpuMemTotal)"));
      },
      comm);
}
