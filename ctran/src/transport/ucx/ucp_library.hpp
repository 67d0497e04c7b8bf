// The UCP library, loaded at run time: ctran links nothing of UCX, so its libraries build and
// run where UCX is missing, and one build runs on any libucp.so.0 from UCX 1.13 on (Debian's,
// the libucx PyPI wheels', a cluster's own).
//
// Where it is looked for, in order (the first that loads and has every function wins):
//   1. RCCLX_UCX_LIBRARY: a libucp.so.0 file or a directory holding one; when set, nothing else
//      is tried (a cluster's UCX is used or the error says why not);
//   2. the libucx Python package's lib/ (RCCLX_UCX_WHEEL_DIR, which ctran's Python package sets
//      when libucx is installed; C programs set it themselves or use 1 or 3);
//   3. the system's libucp.so.0 (the dynamic linker's search path).
// RCCLX_UCX_PREFER_SYSTEM=1 swaps 2 and 3.
#pragma once

#include <ucp/api/ucp.h>

#include <string>

namespace ctran::ucx {

// Every UCP (and UCS) function the transport calls: the subset present in UCX 1.13.
#define RCCLX_UCP_FUNCTIONS(X)      \
  X(ucp_get_version)                \
  X(ucp_config_read)                \
  X(ucp_config_modify)              \
  X(ucp_config_release)             \
  X(ucp_init_version)               \
  X(ucp_cleanup)                    \
  X(ucp_worker_create)              \
  X(ucp_worker_destroy)             \
  X(ucp_worker_get_address)         \
  X(ucp_worker_release_address)     \
  X(ucp_worker_progress)            \
  X(ucp_worker_arm)                 \
  X(ucp_worker_get_efd)             \
  X(ucp_ep_create)                  \
  X(ucp_ep_close_nbx)               \
  X(ucp_ep_flush_nbx)               \
  X(ucp_mem_map)                    \
  X(ucp_mem_unmap)                  \
  X(ucp_rkey_pack)                  \
  X(ucp_rkey_buffer_release)        \
  X(ucp_ep_rkey_unpack)             \
  X(ucp_rkey_destroy)               \
  X(ucp_put_nbx)                    \
  X(ucp_worker_set_am_recv_handler) \
  X(ucp_am_send_nbx)                \
  X(ucp_request_check_status)       \
  X(ucp_request_free)               \
  X(ucp_request_cancel)             \
  X(ucp_context_query)              \
  X(ucp_tag_send_nbx)               \
  X(ucp_tag_recv_nbx)               \
  X(ucp_tag_recv_request_test)      \
  X(ucs_status_string)

/// Pointers to the loaded library's functions, typed from the UCP headers.
struct UcpApi {
#define RCCLX_UCP_MEMBER(name) decltype(&::name) name = nullptr;
  RCCLX_UCP_FUNCTIONS(RCCLX_UCP_MEMBER)
#undef RCCLX_UCP_MEMBER
};

/// The UCP API version the transport declares to ucp_init_version: it calls nothing newer than
/// 1.13, so a newer library accepts it and a 1.13 library raises no version warning.
constexpr unsigned kUcpApiMajor = 1;
constexpr unsigned kUcpApiMinor = 13;

/// The process's libucp, loaded once (never unloaded: UCX keeps state until exit).
class UcpLibrary {
 public:
  /// The library, loading it on the first call (thread-safe). Throws InvalidUsage saying what
  /// was looked for and where when no candidate loads; a failed search is tried again on the
  /// next call (the environment may have changed).
  static const UcpLibrary& get();
  /// As get(), but returns nullptr and sets `why` instead of throwing.
  static const UcpLibrary* tryGet(std::string* why);

  const UcpApi& api() const { return api_; }
  /// The file that was loaded, as the dynamic linker resolved it.
  const std::string& path() const { return path_; }
  /// "1.22.0".
  const std::string& version() const { return version_; }
  /// Which candidate it was ("RCCLX_UCX_LIBRARY", "libucx wheel", "system").
  const std::string& source() const { return source_; }

 private:
  UcpLibrary() = default;
  UcpApi api_;
  std::string path_, version_, source_;
};

/// A UCS status as text with its code, e.g. "Endpoint timeout (status -80)".
std::string statusText(const UcpApi& api, ucs_status_t status);

}  // namespace ctran::ucx
