// Error reporting of the C ABI: result strings, the per-thread last error, the boundary's sink.
#include <string>

#include "api.hpp"
#include "ctran/logging.hpp"

namespace rcclx::nccl {
namespace {

thread_local std::string tLastError;

}  // namespace

void recordLastError(const char* entryPoint, const char* message) noexcept {
  try {
    tLastError = std::string(entryPoint) + ": " + message;
  } catch (...) {
  }
}

ncclResult_t fail(const char* entryPoint, ncclResult_t result, const char* message) noexcept {
  try {
    tLastError = std::string(entryPoint) + ": " + message;
    CTRAN_WARN(tLastError, " (", ctran::resultName(static_cast<ctran::Result>(result)), ")");
  } catch (...) {
    // Out of memory while recording the error: the result code still reaches the caller.
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
    default: return "unknown result code";
  }
}

NCCL_API(const char*, ncclGetLastError, ncclComm_t comm);
const char* ncclGetLastError(ncclComm_t /*comm*/) { return rcclx::nccl::tLastError.c_str(); }

NCCL_API(void, ncclResetDebugInit, void);
void ncclResetDebugInit(void) { ctran::log::refresh(); }

// NCCL's library exports this function without declaring it in its headers (it does the work
// of ncclResetDebugInit there); a program that names it loads, and it re-reads the level too.
NCCL_API(void, ncclResetDebugInitInternal, void);
void ncclResetDebugInitInternal(void) { ctran::log::refresh(); }
