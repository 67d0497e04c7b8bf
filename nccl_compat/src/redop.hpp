// ncclRedOp_t values as the core's reductions: the five built-in operators, and the
// per-communicator PreMulSum handles from ncclRedOpCreatePreMulSum (ncclNumOps and up).
#pragma once

#include "comm.hpp"
#include "rcclx/types.hpp"

namespace rcclx::nccl {

struct ResolvedOp {
  rcclx::RedOp op;
  double scalar;  ///< PREMUL_SUM's scalar (1 otherwise)
};

/// The reduction `op` names on `comm` for a call on `type`. Throws InvalidArgument naming op
/// for a value that is neither built in nor a live handle of this communicator, or a handle
/// created for another datatype.
ResolvedOp resolveOp(const ncclComm& comm, ncclRedOp_t op, rcclx::DataType type);

/// The value of a scalar of `type` at `data` in host memory, as a double.
double scalarValue(const void* data, rcclx::DataType type);

}  // namespace rcclx::nccl
