// Error reporting of the C ABI: result strings, the per-thread last error, the boundary's sink.
#include <cstdio>

#include "api.hpp"
#include "ctran/logging.hpp"

namespace rcclx::nccl {
namespace {

// A fixed buffer, as NCCL's: a pointer ncclGetLastError returned stays valid for the thread's
// life (the next error replaces its text, never frees it), and recording allocates nothing.
constexpr size_t kLastErrorBytes = 4096;
thread_local char tLastError[kLastErrorBytes] = "";

void setLastError(const char* entryPoint, const char* message) noexcept {
  std::snprintf(tLastError, kLastErrorBytes, "%s: %s", entryPoint, message);
}

}  // namespace

void recordLastError(const char* entryPoint, const char* message) noexcept {
  setLastError(entryPoint, message);
}

ncclResult_t fail(const char* entryPoint, ncclResult_t result, const char* message) noexcept {
  setLastError(entryPoint, message);
  try {
    CTRAN_WARN(tLastError, " (", ctran::resultName(static_cast<ctran::Result>(result)), ")");
  } catch (...) {
    // Out of memory while logging the error: the result code still reaches the caller.
  }
  return result;
}

}  // namespace rcclx::nccl

static_assert(static_cast<int>(ctran::Result::kInProgress) == ncclInProgress,
              "ctran::Result must number its codes as ncclResult_t does");

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result);
const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with RCCLX_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with RCCLX_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the RCCLX developers";
    case ncclInvalidArgument: return "invalid argument (run with RCCLX_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with RCCLX_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "operation timed out";
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* ncclGetLastError(ncclComm_t /*comm*/) { return rcclx::nccl::tLastError; }

NCCL_API(void, ncclResetDebugInit, void);
void ncclResetDebugInit(void) { ctran::log::refresh(); }

// NCCL's library exports this function without declaring it in its headers (it does the work
// of ncclResetDebugInit there); a program that names it loads, and it re-reads the level too.
NCCL_API(void, ncclResetDebugInitInternal, void);
void ncclResetDebugInitInternal(void) { ctran::log::refresh(); }
