// One UCP context and worker per ucx transport, the lock that serialises every call on them,
// and the progress thread that keeps the worker moving while this rank's own threads are busy
// elsewhere or asleep.
//
// Why a progress thread: signals arrive as active messages, and on host memory reached over tcp
// UCX emulates puts by active messages too, all of which the TARGET applies inside
// ucp_worker_progress. A rank blocked in a wait on its own signal cell never calls into UCX, so
// without this thread peers' puts and signals would not land until it did.
//
// Why it sleeps: ranks may outnumber cores. After RCCLX_SPIN_US without progress the thread
// arms the worker (ucp_worker_arm) and blocks on the worker's event fd (ucp_worker_get_efd)
// with epoll, waking on the next arrival, a stop request, or every kIdleWakeMs (UCX's keepalive
// runs then).
//
// Threading: the worker is created UCS_THREAD_MODE_SERIALIZED and every UCP call on it is made
// under one mutex (lock()). UCS_THREAD_MODE_MULTI would take an equivalent lock inside UCX, but
// only in builds configured --enable-mt (a cluster's UCX may not be); a single owning thread
// fed by a request queue would cost every put a thread hand-off (two context switches on a
// busy core). With the mutex, the thread that issues a put also progresses the worker while it
// waits for completion, and the progress thread holds the lock only while it progresses, never
// while it sleeps. Callbacks UCX runs inside progress (error handlers) run under the lock and
// must not take it.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "ctran/store.hpp"
#include "ctran/wait.hpp"
#include "ucp_library.hpp"

namespace ctran::ucx {

class UcxWorker {
 public:
  /// Reads UCX's configuration (UCX_* environment), creates the context with RMA, 64-bit
  /// atomics and wake-up, and one worker. Throws SystemError naming the failed call.
  explicit UcxWorker(const UcpLibrary& library);
  /// Stops the progress thread (if started) and destroys the worker and the context. Every
  /// endpoint, memory handle and remote key must have been released first.
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  const UcpApi& api() const { return api_; }
  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  /// The lock every UCP call on this worker (and its endpoints, keys and requests) is made under.
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mu_); }
  /// This worker's address, for peers' ucp_ep_create.
  Bytes address();

  /// Starts the progress thread.
  void startProgress();
  /// Stops and joins the progress thread (idempotent).
  void stopProgress();

  /// Waits for the outcome of a non-blocking call (its return value, issued under lock()),
  /// progressing the worker meanwhile; frees the request. Every ~millisecond of waiting it
  /// calls `check` (which may throw, e.g. for a failed peer); at `deadline` it throws
  /// TimeoutError naming what() and blaming `peer` (-1: none). Returns the operation's status
  /// (UCS_OK or its error).
  ucs_status_t wait(ucs_status_ptr_t request, const Deadline& deadline,
                    const std::function<std::string()>& what,
                    const std::function<void()>& check = nullptr, int peer = -1);

  /// Throws SystemError "ucx transport: <what>: <status text>" unless `status` is UCS_OK.
  void checkStatus(ucs_status_t status, const char* what) const;

 private:
  void progressLoop();
  /// Progresses until nothing moves; true if anything did. Caller holds mu_.
  bool progressLocked();

  const UcpApi& api_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::mutex mu_;
  int epollFd_ = -1;
  int wakeFd_ = -1;  // eventfd: stopProgress() wakes the sleeping thread through it
  std::atomic<bool> stop_{false};
  std::thread progress_;
};

}  // namespace ctran::ucx
