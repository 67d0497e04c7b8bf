// Unique ids of the C ABI: ctran's (a store this process hosts) or, with NCCL_COMM_ID set, one
// naming that fixed address, whose store rank 0 hosts when it initialises its communicator.
#pragma once

#include <memory>

#include "ctran/bootstrap.hpp"
#include "nccl.h"

namespace rcclx::nccl {

/// ncclGetUniqueId's id.
ncclUniqueId makeUniqueId();

/// Stops serving `id` when this process made it and has not joined it (see
/// ctran::createUniqueId): an initialisation through it failed before joining, so the id is spent.
void releaseUnjoinedId(const ncclUniqueId& id);

/// Joins the group `id` names as `rank` of `nranks`. For an NCCL_COMM_ID id, rank 0 starts the
/// store server on that address and `*keepAlive` receives it (it must outlive the group).
std::unique_ptr<ctran::Bootstrap> joinGroup(const ncclUniqueId& id, int rank, int nranks,
                                            std::shared_ptr<void>* keepAlive);

}  // namespace rcclx::nccl
