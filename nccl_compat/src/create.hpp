// Making communicator handles: now, in a thread (non-blocking config) or at the outermost
// ncclGroupEnd (inside a group); shared by the ncclCommInit* and ncclCommSplit / Shrink entries.
#pragma once

#include <functional>
#include <memory>

#include "comm.hpp"
#include "config.hpp"

namespace rcclx::nccl {

/// Builds the core communicator of a handle being initialised (the handle is passed so the
/// factory can fill its keepAlive).
using CoreFactory = std::function<std::unique_ptr<rcclx::Communicator>(ncclComm&)>;

/// Makes a handle whose core communicator `make` builds: at once when blocking outside a group
/// (a failure frees the handle, *out stays NULL, the error is thrown), in a background thread
/// for a non-blocking config (returns ncclInProgress; ncclCommGetAsyncError reports the end),
/// or at the outermost ncclGroupEnd inside a group. `*out` is set before the handle is ready
/// in the last two cases, as NCCL does.
ncclResult_t createComm(ncclComm_t* out, const CommOptions& options, CoreFactory make);

/// A ready handle around `core` (split, shrink, ncclCommInitAll).
ncclComm* adoptComm(std::unique_ptr<rcclx::Communicator> core, const CommOptions& options);

/// The factory of ncclCommInitRank* and ncclCommGrow: joins the group `id` names as `rank` of
/// `nranks`, on the current GPU (or host memory).
CoreFactory fromId(const ncclUniqueId& id, int nranks, int rank);

/// The options a communicator was created with (what a split inherits).
CommOptions optionsOf(const ncclComm& comm);

}  // namespace rcclx::nccl
