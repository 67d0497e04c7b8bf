// Error policy for every RCCLX native library.
//
//  1. Internal bug (a broken invariant)      -> CTRAN_ASSERT aborts with file:line.
//  2. Recoverable failure (bad input, I/O,
//     a dead peer, a timeout)                 -> throw a ctran::Error subclass carrying a Result.
//  3. C entry points (nccl_compat)            -> one catch-all boundary each, mapped to
//                                                ncclResult_t, message kept for ncclGetLastError.
//  4. Destructors                             -> log and continue, never throw.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace ctran {

/// Result codes, numerically identical to ncclResult_t so the C ABI maps them 1:1.
enum class Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

/// Human-readable name of a result code ("invalid argument", ...).
const char* resultName(Result r);

/// Base of every exception RCCLX throws; carries the result code the C ABI returns.
class Error : public std::runtime_error {
 public:
  Error(Result result, const std::string& message) : std::runtime_error(message), result_(result) {}
  /// The ncclResult_t-compatible code of this error.
  Result result() const { return result_; }

 private:
  Result result_;
};

/// An argument had a value the call cannot accept (names the argument and the value).
class InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& m) : Error(Result::kInvalidArgument, m) {}
};

/// The call is valid in isolation but not in the object's current state (e.g. use after destroy).
class InvalidUsage : public Error {
 public:
  explicit InvalidUsage(const std::string& m) : Error(Result::kInvalidUsage, m) {}
};

/// An operating-system call failed.
class SystemError : public Error {
 public:
  explicit SystemError(const std::string& m) : Error(Result::kSystemError, m) {}
};

/// A peer failed, disconnected, or reported an error.
class RemoteError : public Error {
 public:
  explicit RemoteError(const std::string& m) : Error(Result::kRemoteError, m) {}
};

/// A wait outlived its deadline (RCCLX_TIMEOUT_MS); the message names the peer waited on, and
/// peer() is its rank (-1 when the wait was not on one peer).
class TimeoutError : public RemoteError {
 public:
  explicit TimeoutError(const std::string& m, int peer = -1) : RemoteError(m), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

/// A GPU runtime call failed or no GPU is usable.
class CudaError : public Error {
 public:
  explicit CudaError(const std::string& m) : Error(Result::kUnhandledCudaError, m) {}
};

/// Builds a message from stream-insertable parts: strCat("count ", n, " is negative").
template <typename... Parts>
std::string strCat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// Throws SystemError with "what: strerror(errno)".
[[noreturn]] void throwSystemError(const std::string& what, int err);

[[noreturn]] void assertFailed(const char* cond, const char* file, int line,
                               const std::string& msg);

}  // namespace ctran

/// Aborts on a broken internal invariant (a bug in RCCLX, never bad user input).
#define CTRAN_ASSERT(cond, ...)                                                          \
  do {                                                                                   \
    if (!(cond))                                                                         \
      ::ctran::assertFailed(#cond, __FILE__, __LINE__, ::ctran::strCat("" __VA_ARGS__)); \
  } while (0)

/// Throws ErrorType(message parts...) when cond is false.
#define CTRAN_CHECK(cond, ErrorType, ...)                       \
  do {                                                          \
    if (!(cond)) throw ErrorType(::ctran::strCat(__VA_ARGS__)); \
  } while (0)

/// Throws SystemError naming the call and errno when a POSIX call returns -1.
#define CTRAN_SYSCHECK(expr, what)                              \
  do {                                                          \
    if ((expr) == -1) ::ctran::throwSystemError((what), errno); \
  } while (0)
