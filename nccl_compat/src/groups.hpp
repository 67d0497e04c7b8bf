// NCCL's group semantics on RCCLX: ncclGroupStart / ncclGroupEnd nest per thread; the calls
// between them, on any number of communicators, are recorded by each core communicator (its
// own groupStart / groupEnd) and run together at the outermost end; communicator
// initialisations recorded in a group run there too, in parallel, since each is a collective
// that one thread could not otherwise complete for several ranks.
#pragma once

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
/// outermost end took, in microseconds (0 for an inner end).
double end();
/// Enrols `comm` (locked by the caller) in the open group: its core communicator starts
/// recording on first use.
void enrol(ncclComm* comm);
/// Records the initialisation of `comm` to run at the outermost ncclGroupEnd; the handles a
/// group initialises together form a LocalClique.
void deferInit(ncclComm* comm, std::function<void()> init);

/// Runs `tasks` at the same time (one thread each beyond the first) and waits for all; then
/// rethrows the first exception any of them threw.
void runTogether(std::vector<std::function<void()>>& tasks);

}  // namespace rcclx::nccl::groups
