// ncclGroupStart / ncclGroupEnd / ncclGroupSimulateEnd and the per-thread group state.
#include "groups.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "api.hpp"
#include "comm.hpp"

namespace rcclx::nccl::groups {
namespace {

struct GroupState {
  int depth = 0;
  std::vector<ncclComm*> comms;              ///< enrolled communicators, in order of first use
  std::vector<std::function<void()>> inits;  ///< initialisations and splits, run together
  std::vector<ncclComm*> initialised;        ///< the handles they fill
  const char* failedCall = nullptr;          ///< the entry point of the group's first failed call
  std::exception_ptr failure;                ///< and what it threw
};

thread_local GroupState tGroup;

/// Records `error` as the first error of the group and, when it is of the kind peers may share,
/// as `comm`'s asynchronous error (ncclCommGetAsyncError).
void noteFailure(ncclComm* comm, std::exception_ptr error, std::exception_ptr& firstError) {
  if (!firstError) firstError = error;
  try {
    std::rethrow_exception(error);
  } catch (const ctran::Error& e) {
    noteAsyncError(comm, static_cast<ncclResult_t>(e.result()));
  } catch (...) {
    noteAsyncError(comm, ncclInternalError);
  }
}

/// Ends the core group of every enrolled communicator without waiting, then waits for each.
void endCommunicatorGroups(std::vector<ncclComm*>& comms, std::exception_ptr& firstError) {
  std::vector<std::pair<ncclComm*, WorkPtr>> works;
  works.reserve(comms.size());
  for (ncclComm* c : comms) {
    try {
      std::lock_guard<std::mutex> lock(c->callMu);
      // A communicator aborted from another thread mid-group has nothing left to run.
      if (c->core && !c->core->destroyed() && c->core->inGroup())
        works.emplace_back(c, c->core->groupEnd(/*async=*/true));
    } catch (...) {
      noteFailure(c, std::current_exception(), firstError);
    }
  }
  for (auto& [c, w] : works) {
    if (!w) continue;  // device work: enqueued on its stream
    try {
      w->wait();
    } catch (...) {
      noteFailure(c, std::current_exception(), firstError);
    }
  }
}

/// The error ncclGroupEnd returns for a group whose call `entryPoint` failed with `failure`:
/// of the same kind, naming that call.
ctran::Error groupFailed(const char* entryPoint, const std::exception_ptr& failure) {
  auto result = ctran::Result::kInternalError;
  std::string why = "an unknown exception";
  try {
    std::rethrow_exception(failure);
  } catch (const ctran::Error& e) {
    result = e.result();
    why = e.what();
  } catch (const std::bad_alloc&) {
    result = ctran::Result::kSystemError;
    why = "out of host memory";
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
  }
  return ctran::Error(result, ctran::strCat(entryPoint, " in this group failed (", why,
                                            "), so none of the group's calls ran"));
}

/// Undoes a group one of whose calls failed: the recorded initialisations fail with `error`
/// (their ids stay unjoined) and every enrolled communicator drops its recorded calls.
void cancel(const std::vector<ncclComm*>& initialised, const std::vector<ncclComm*>& comms,
            const ctran::Error& error) {
  for (ncclComm* h : initialised) {
    h->initResult = static_cast<ncclResult_t>(error.result());
    h->initMessage = error.what();
    h->state.store(CommState::kInitFailed, std::memory_order_release);
  }
  for (ncclComm* c : comms) {
    std::lock_guard<std::mutex> lock(c->callMu);
    if (c->core && !c->core->destroyed()) c->core->groupCancel();
  }
}

}  // namespace

bool active() { return tGroup.depth > 0; }

void noteFailedCall(const char* entryPoint, std::exception_ptr error) {
  if (!active() || tGroup.failure) return;
  tGroup.failedCall = entryPoint;
  tGroup.failure = std::move(error);
}

void start() { ++tGroup.depth; }

void enrol(ncclComm* comm) {
  auto& comms = tGroup.comms;
  if (std::find(comms.begin(), comms.end(), comm) != comms.end()) return;
  comm->core->groupStart();
  comms.push_back(comm);
}

void deferInit(ncclComm* comm, std::function<void()> init) {
  tGroup.inits.push_back(std::move(init));
  tGroup.initialised.push_back(comm);
}

void deferTask(std::function<void()> task) { tGroup.inits.push_back(std::move(task)); }

void runTogether(std::vector<std::function<void()>>& tasks) {
  std::vector<std::exception_ptr> errors(tasks.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < tasks.size(); ++i) {
    threads.emplace_back([&tasks, &errors, i] {
      try {
        tasks[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  if (!tasks.empty()) {
    try {
      tasks[0]();
    } catch (...) {
      errors[0] = std::current_exception();
    }
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

double end() {
  CTRAN_CHECK(tGroup.depth > 0, ctran::InvalidUsage,
              "no group is open on this thread (ncclGroupEnd without ncclGroupStart)");
  if (--tGroup.depth > 0) return 0;
  const auto t0 = std::chrono::steady_clock::now();
  // Taken out first, so the state is clean for the next group whatever happens below.
  auto inits = std::move(tGroup.inits);
  auto initialised = std::move(tGroup.initialised);
  auto comms = std::move(tGroup.comms);
  const char* failedCall = tGroup.failedCall;
  const std::exception_ptr failure = std::move(tGroup.failure);
  tGroup = GroupState{};
  if (failure) {
    const ctran::Error error = groupFailed(failedCall, failure);
    cancel(initialised, comms, error);
    throw error;
  }
  std::exception_ptr firstError;
  try {
    runTogether(inits);
  } catch (...) {
    firstError = std::current_exception();
  }
  std::vector<ncclComm*> ready;
  for (ncclComm* c : initialised)
    if (c->state.load(std::memory_order_acquire) == CommState::kReady) ready.push_back(c);
  formClique(ready);
  endCommunicatorGroups(comms, firstError);
  if (firstError) std::rethrow_exception(firstError);
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace rcclx::nccl::groups

namespace groups = rcclx::nccl::groups;

NCCL_API(ncclResult_t, ncclGroupStart, void);
ncclResult_t ncclGroupStart(void) {
  return rcclx::nccl::boundary("ncclGroupStart", [] { groups::start(); });
}

NCCL_API(ncclResult_t, ncclGroupEnd, void);
ncclResult_t ncclGroupEnd(void) {
  return rcclx::nccl::boundary("ncclGroupEnd", [] { groups::end(); });
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) {
  return rcclx::nccl::boundary("ncclGroupSimulateEnd", [&] {
    if (simInfo != nullptr) {
      CTRAN_CHECK(simInfo->magic == NCCL_SIM_INFO_MAGIC, ctran::InvalidArgument, "simInfo->magic ",
                  simInfo->magic,
                  " is not NCCL_SIM_INFO_MAGIC (initialise it with NCCL_SIM_INFO_INITIALIZER)");
      CTRAN_CHECK(simInfo->size >= sizeof(ncclSimInfo_t), ctran::InvalidArgument, "simInfo->size ",
                  simInfo->size, " is smaller than ncclSimInfo_t (", sizeof(ncclSimInfo_t),
                  " bytes)");
    }
    const double us = groups::end();
    if (simInfo != nullptr) simInfo->estimatedTime = static_cast<float>(us);
  });
}
