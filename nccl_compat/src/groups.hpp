// NCCL's group semantics on RCCLX: ncclGroupStart / ncclGroupEnd nest per thread; the calls
// between them, on any number of communicators, are recorded by each core communicator (its
// own groupStart / groupEnd) and run together at the outermost end; communicator
// initialisations recorded in a group run there too, in parallel, since each is a collective
// that one thread could not otherwise complete for several ranks.
#pragma once

#include <exception>
#include <functional>

#include "nccl.h"

namespace rcclx::nccl::groups {

/// True while this thread is inside ncclGroupStart / ncclGroupEnd.
bool active();
/// ncclGroupStart.
void start();
/// ncclGroupEnd: at the outermost level, runs the recorded initialisations, then ends every
/// enrolled communicator's group (all started before any is waited on) and waits for them.
/// Throws the first error met, after every part has finished. Returns the host time the
/// outermost end took, in microseconds (0 for an inner end). When a call of the group failed
/// (noteFailedCall), nothing of it runs: every enrolled communicator's group is cancelled, the
/// recorded initialisations fail, and that call's error is thrown, as NCCL's group is atomic.
double end();
/// Inside a group: records that `entryPoint` (a call that joins the group: a collective, a send
/// or receive, an initialisation) failed with `error`; the first one recorded is what
/// ncclGroupEnd returns. Does nothing outside a group.
void noteFailedCall(const char* entryPoint, std::exception_ptr error);
/// Runs `body`, a call that joins the open group, passing a failure to noteFailedCall.
template <typename Body>
auto joiningGroup(const char* entryPoint, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (...) {
    noteFailedCall(entryPoint, std::current_exception());
    throw;
  }
}
/// Enrols `comm` (locked by the caller) in the open group: its core communicator starts
/// recording on first use.
void enrol(ncclComm* comm);
/// Records the initialisation of `comm` to run at the outermost ncclGroupEnd; the handles a
/// group initialises together form a LocalClique.
void deferInit(ncclComm* comm, std::function<void()> init);
/// Records `task`, a rank's part in making a communicator it gets no handle of (a split with
/// NCCL_SPLIT_NOCOLOR), to run with the initialisations.
void deferTask(std::function<void()> task);

/// Runs `tasks` at the same time (one thread each beyond the first) and waits for all; then
/// rethrows the first exception any of them threw.
void runTogether(std::vector<std::function<void()>>& tasks);

}  // namespace rcclx::nccl::groups
