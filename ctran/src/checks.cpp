// Result names and the two out-of-line throw/abort helpers of checks.hpp.
#include "ctran/checks.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ctran {

const char* resultName(Result r) {
  switch (r) {
    case Result::kSuccess: return "no error";
    case Result::kUnhandledCudaError: return "unhandled cuda error";
    case Result::kSystemError: return "unhandled system error";
    case Result::kInternalError: return "internal error";
    case Result::kInvalidArgument: return "invalid argument";
    case Result::kInvalidUsage: return "invalid usage";
    case Result::kRemoteError: return "remote process exited or there was a network error";
    case Result::kInProgress: return "operation in progress";
  }
  return "unknown result code";
}

void throwSystemError(const std::string& what, int err) {
  throw SystemError(strCat(what, ": ", std::strerror(err), " (errno ", err, ")"));
}

void assertFailed(const char* cond, const char* file, int line, const std::string& msg) {
  std::fprintf(stderr, "rcclx: internal error at %s:%d: assertion '%s' failed%s%s\n", file, line,
               cond, msg.empty() ? "" : ": ", msg.c_str());
  std::abort();
}

}  // namespace ctran
