// Implementation of ucx_worker.hpp.
#include "ucx_worker.hpp"

#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "ctran/checks.hpp"
#include "ctran/config.hpp"
#include "ctran/logging.hpp"

namespace ctran::ucx {
namespace {

using Clock = std::chrono::steady_clock;

// The longest the progress thread sleeps without looking at the worker: UCX's keepalive (which
// finds a dead peer on transports that report nothing) runs inside progress.
constexpr int kIdleWakeMs = 100;

// Sets UCX's option `name` (as ucp_config_modify takes it: UCX_<name> in the environment) to
// `value`, unless the user set UCX_<name>: their setting wins.
void setUnlessUserSet(const UcpApi& api, ucp_config_t* config, const std::string& name,
                      const std::string& value) {
  if (std::getenv(("UCX_" + name).c_str()) != nullptr) return;
  ucs_status_t s = api.ucp_config_modify(config, name.c_str(), value.c_str());
  if (s != UCS_OK) {
    CTRAN_INFO("ucx transport: could not set ", name, "=", value, ": ", statusText(api, s));
  }
}

// UCX's keepalive: its own default (20 s) would leave a dead peer on some transports unnoticed
// for most of a collective's timeout. UCX's tcp transport's segments: its default (64 KiB)
// moves a large put in many small sends, each a pass of the progress engine on both sides.
void applyDefaults(const UcpApi& api, ucp_config_t* config) {
  const int64_t ms = knob::RCCLX_UCX_KEEPALIVE_MS();
  if (ms > 0) setUnlessUserSet(api, config, "KEEPALIVE_INTERVAL", strCat(ms, "ms"));
  const int64_t seg = knob::RCCLX_UCX_TCP_SEG_BYTES();
  if (seg > 0) {
    setUnlessUserSet(api, config, "TCP_TX_SEG_SIZE", std::to_string(seg));
    setUnlessUserSet(api, config, "TCP_RX_SEG_SIZE", std::to_string(seg));
  }
}

}  // namespace

UcxWorker::UcxWorker(const UcpLibrary& library) : api_(library.api()) {
  ucp_config_t* config = nullptr;
  checkStatus(api_.ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
  applyDefaults(api_, config);
  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  // Active messages carry signals and failure reports. Not UCX's 64-bit atomics: on host
  // memory over tcp UCX 1.22 finds no protocol for them ("cannot find remote protocol ...
  // amo_post") and 1.13 fails them now and then on a fresh endpoint, each time failing the
  // endpoint; an active message works on every UCX, and its handler wakes the waiters itself.
  // Tagged messages move GPU buffers (ucx_messages.hpp).
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  ucs_status_t s = api_.ucp_init_version(kUcpApiMajor, kUcpApiMinor, &params, config, &context_);
  api_.ucp_config_release(config);
  checkStatus(s, "ucp_init");
  ucp_worker_params_t wp = {};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // see the header: every call is under mu_
  s = api_.ucp_worker_create(context_, &wp, &worker_);
  if (s != UCS_OK) {
    api_.ucp_cleanup(context_);
    checkStatus(s, "ucp_worker_create");
  }
}

UcxWorker::~UcxWorker() {
  stopProgress();
  if (worker_ != nullptr) api_.ucp_worker_destroy(worker_);
  if (context_ != nullptr) api_.ucp_cleanup(context_);
}

void UcxWorker::checkStatus(ucs_status_t status, const char* what) const {
  if (status == UCS_OK) return;
  throw SystemError(strCat("ucx transport: ", what, ": ", statusText(api_, status)));
}

Bytes UcxWorker::address() {
  auto l = lock();
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  checkStatus(api_.ucp_worker_get_address(worker_, &addr, &len), "ucp_worker_get_address");
  Bytes out(reinterpret_cast<const uint8_t*>(addr), reinterpret_cast<const uint8_t*>(addr) + len);
  api_.ucp_worker_release_address(worker_, addr);
  return out;
}

void UcxWorker::startProgress() {
  CTRAN_ASSERT(!progress_.joinable(), "progress thread started twice");
  int efd = -1;
  {
    auto l = lock();
    checkStatus(api_.ucp_worker_get_efd(worker_, &efd), "ucp_worker_get_efd");
  }
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  CTRAN_SYSCHECK(epollFd_, "epoll_create1");
  wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  CTRAN_SYSCHECK(wakeFd_, "eventfd");
  for (int fd : {efd, wakeFd_}) {
    epoll_event ev = {};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    CTRAN_SYSCHECK(::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev), "epoll_ctl");
  }
  stop_.store(false);
  progress_ = std::thread([this] { progressLoop(); });
}

void UcxWorker::stopProgress() {
  if (progress_.joinable()) {
    stop_.store(true);
    uint64_t one = 1;
    if (::write(wakeFd_, &one, sizeof(one)) < 0) CTRAN_WARN("ucx transport: wake-up failed");
    progress_.join();
  }
  // The worker's event fd belongs to UCX; only our own descriptors are closed.
  if (epollFd_ >= 0) ::close(epollFd_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  epollFd_ = wakeFd_ = -1;
}

bool UcxWorker::progressLocked() {
  bool any = false;
  while (api_.ucp_worker_progress(worker_) != 0) any = true;
  return any;
}

void UcxWorker::progressLoop() {
  const auto spin = std::chrono::microseconds(std::max<int64_t>(0, knob::RCCLX_SPIN_US()));
  auto lastActive = Clock::now();
  while (!stop_.load(std::memory_order_relaxed)) {
    bool moved = false, armed = false;
    {
      auto l = lock();
      moved = progressLocked();
      // Arm only once the spin is over: arming and sleeping costs two system calls and a
      // wake-up, a loss when the next message is microseconds away (a ping-pong).
      if (!moved && Clock::now() - lastActive >= spin) {
        ucs_status_t s = api_.ucp_worker_arm(worker_);
        armed = s == UCS_OK;  // UCS_ERR_BUSY: something arrived meanwhile, progress again
        if (s != UCS_OK && s != UCS_ERR_BUSY) {
          CTRAN_WARN("ucx transport: ucp_worker_arm: ", statusText(api_, s));
        }
      }
    }
    if (moved) {
      lastActive = Clock::now();
      continue;
    }
    if (!armed) {
      sched_yield();  // let a rank thread that wants the lock have it
      continue;
    }
    epoll_event events[2];
    int n = ::epoll_wait(epollFd_, events, 2, kIdleWakeMs);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.fd == wakeFd_) {
        uint64_t v;
        if (::read(wakeFd_, &v, sizeof(v)) < 0) {
          // Non-blocking: nothing to drain is fine.
        }
      }
    }
    lastActive = Clock::now();
  }
}

ucs_status_t UcxWorker::wait(ucs_status_ptr_t request, const Deadline& deadline,
                             const std::function<std::string()>& what,
                             const std::function<void()>& check, int peer) {
  if (request == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  Backoff backoff;
  auto lastCheck = Clock::now();
  for (;;) {
    {
      auto l = lock();
      bool moved = progressLocked();
      ucs_status_t s = api_.ucp_request_check_status(request);
      if (s != UCS_INPROGRESS) {
        api_.ucp_request_free(request);
        return s;
      }
      if (moved) backoff.reset();
    }
    backoff.pause();
    if (Clock::now() - lastCheck >= std::chrono::milliseconds(1)) {
      lastCheck = Clock::now();
      try {
        if (check) check();
        if (deadline.expired()) throwTimeout(deadline, what(), peer);
      } catch (...) {
        // UCX completes the request later (with an error once the endpoint is closed) and
        // frees it then: it must not be left for the caller to free.
        auto l = lock();
        api_.ucp_request_free(request);
        throw;
      }
    }
  }
}

}  // namespace ctran::ucx
