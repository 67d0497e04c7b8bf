// How every nccl* entry point is declared and how it turns exceptions into ncclResult_t.
//
// NCCL_API declares the exported function (weak, so a profiler may interpose it) and its
// strong p-prefixed alias, as NCCL does; the linker version script (libnccl.map) exports
// nothing else. Every entry point that can fail runs its body inside exactly one boundary().
#pragma once

#include <new>
#include <stdexcept>
#include <type_traits>

#include "ctran/checks.hpp"
#include "nccl.h"

#define NCCL_API(ret, func, ...)                          \
  extern "C" __attribute__((visibility("default")))       \
  __attribute__((alias(#func))) ret p##func(__VA_ARGS__); \
  extern "C" __attribute__((visibility("default"))) __attribute__((weak)) ret func(__VA_ARGS__)

namespace rcclx::nccl {

/// Records "<entryPoint>: <message>" as this thread's last error (ncclGetLastError), logs it
/// at WARN, and returns `result`. Never throws.
ncclResult_t fail(const char* entryPoint, ncclResult_t result, const char* message) noexcept;

/// Records "<entryPoint>: <message>" as this thread's last error without logging it (a
/// failure already logged once, seen again by a poller). Never throws.
void recordLastError(const char* entryPoint, const char* message) noexcept;

/// Remembers a failure of an operation on `comm` that its peers may also have met (a remote,
/// system or internal error), so ncclCommGetAsyncError reports it; argument errors are the
/// caller's alone and are not kept. Does nothing for a null or unknown handle. Never throws.
void noteAsyncError(ncclComm_t comm, ncclResult_t result) noexcept;

/// Runs `body` (returning void, or the ncclResult_t to return on success, e.g. ncclInProgress);
/// maps what it throws to a result code: a ctran::Error to its own result(), std::bad_alloc to
/// ncclSystemError, anything else to ncclInternalError. With `comm`, a failure of the kind
/// noteAsyncError keeps is recorded on it.
template <typename Body>
ncclResult_t boundary(const char* entryPoint, Body&& body, ncclComm_t comm = nullptr) noexcept {
  try {
    if constexpr (std::is_void_v<decltype(body())>) {
      body();
      return ncclSuccess;
    } else {
      return body();
    }
  } catch (const ctran::Error& e) {
    const auto result = static_cast<ncclResult_t>(e.result());
    noteAsyncError(comm, result);
    return fail(entryPoint, result, e.what());
  } catch (const std::bad_alloc&) {
    return fail(entryPoint, ncclSystemError, "out of host memory");
  } catch (const std::exception& e) {
    noteAsyncError(comm, ncclInternalError);
    return fail(entryPoint, ncclInternalError, e.what());
  } catch (...) {
    return fail(entryPoint, ncclInternalError, "unknown exception");
  }
}

/// boundary() for an entry point that returns a value instead of an ncclResult_t (a team, a
/// rank, a count): `body`'s value, or `invalid` when it threw, its message then left in
/// ncclGetLastError.
template <typename T, typename Body>
T answer(const char* entryPoint, T invalid, Body&& body) noexcept {
  T out = invalid;
  boundary(entryPoint, [&] { out = body(); });
  return out;
}

}  // namespace rcclx::nccl
