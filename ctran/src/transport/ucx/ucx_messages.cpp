// Implementation of ucx_messages.hpp.
#include "ucx_messages.hpp"

#include <chrono>
#include <set>
#include <string>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"

namespace ctran::ucx {
namespace {

constexpr int kSeqBits = 40;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr ucp_tag_t kWholeTag = ~ucp_tag_t{0};
// How often a wait looks at the peers it still expects a message from.
constexpr auto kCheckPeriod = std::chrono::milliseconds(1);
// How long a failed exchange waits for its cancelled receives to complete.
constexpr auto kCancelWait = std::chrono::milliseconds(100);
// How long closing the endpoint to this rank may take.
constexpr int64_t kCloseMs = 2000;

ucp_tag_t tagOf(int sender, uint64_t seq) {
  return (static_cast<ucp_tag_t>(sender) << kSeqBits) | (seq & kSeqMask);
}

std::string describe(const Message& m) {
  return strCat(m.send ? "send of " : "receive of ", m.bytes,
                m.send ? " bytes to rank " : " bytes from rank ", m.peer);
}

}  // namespace

UcxMessages::UcxMessages(UcxWorker& worker, int rank, std::vector<ucp_ep_h> endpoints,
                         bool deviceMemory)
    : worker_(worker),
      rank_(rank),
      endpoints_(std::move(endpoints)),
      deviceMemory_(deviceMemory),
      sent_(endpoints_.size(), 0),
      received_(endpoints_.size(), 0) {
  const Bytes self = worker_.address();
  ucp_ep_params_t params = {};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(self.data());
  auto l = worker_.lock();
  worker_.checkStatus(worker_.api().ucp_ep_create(worker_.worker(), &params, &endpoints_[rank_]),
                      "ucp_ep_create (to this rank)");
}

UcxMessages::~UcxMessages() {
  const UcpApi& api = worker_.api();
  ucp_request_param_t param = {};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t request;
  {
    auto l = worker_.lock();
    request = api.ucp_ep_close_nbx(endpoints_[rank_], &param);
  }
  try {
    worker_.wait(request, Deadline::after(kCloseMs),
                 [] { return std::string("the ucx endpoint to this rank to close"); });
  } catch (const Error& e) {
    CTRAN_WARN("ucx messages: ", e.what());
  }
}

void UcxMessages::exchange(const std::vector<Message>& batch, const Deadline& deadline,
                           const std::function<void(int)>& check, const char* what) {
  std::lock_guard<std::mutex> serial(mu_);
  std::vector<Pending> pending;
  pending.reserve(batch.size());
  try {
    issue(batch, pending, what);
    awaitAll(pending, deadline, check, what);
  } catch (...) {
    cancel(pending);
    throw;
  }
}

void UcxMessages::issue(const std::vector<Message>& batch, std::vector<Pending>& pending,
                        const char* what) {
  const UcpApi& api = worker_.api();
  auto l = worker_.lock();
  for (const Message& m : batch) {
    const size_t peer = static_cast<size_t>(m.peer);
    CTRAN_ASSERT(m.peer >= 0 && peer < endpoints_.size() && endpoints_[peer] != nullptr, "rank ",
                 m.peer, " is not reached over ucx");
    ucp_request_param_t param = {};
    // Always a request, even when done at once: one way to completion, and a receive's length.
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t request =
        m.send ? api.ucp_tag_send_nbx(endpoints_[peer], m.data, m.bytes,
                                      tagOf(rank_, sent_[peer]++), &param)
               : api.ucp_tag_recv_nbx(worker_.worker(), m.data, m.bytes,
                                      tagOf(m.peer, received_[peer]++), kWholeTag, &param);
    if (UCS_PTR_IS_ERR(request)) {
      throw SystemError(strCat(what, ": the ucx ", describe(m),
                               " failed to start: ", statusText(api, UCS_PTR_STATUS(request))));
    }
    pending.push_back({&m, request});
  }
}

void UcxMessages::awaitAll(std::vector<Pending>& pending, const Deadline& deadline,
                           const std::function<void(int)>& check, const char* what) {
  const UcpApi& api = worker_.api();
  size_t left = pending.size();
  Backoff backoff;
  auto nextCheck = std::chrono::steady_clock::now() + kCheckPeriod;
  while (left > 0) {
    bool moved = false;
    std::string failed;  // the first error found, thrown once the lock is released
    const Message* failedMessage = nullptr;
    bool misuse = false;  // the sizes of a send and its receive differ: the callers' error
    {
      auto l = worker_.lock();
      while (api.ucp_worker_progress(worker_.worker()) != 0) moved = true;
      for (Pending& p : pending) {
        if (p.request == nullptr) continue;
        ucs_status_t status = api.ucp_request_check_status(p.request);
        if (status == UCS_INPROGRESS) continue;
        const Message& m = *p.message;
        size_t length = m.bytes;
        if (!m.send && status == UCS_OK) {
          ucp_tag_recv_info_t info = {};
          status = api.ucp_tag_recv_request_test(p.request, &info);
          length = info.length;
        }
        api.ucp_request_free(p.request);
        p.request = nullptr;
        --left;
        moved = true;
        if (!failed.empty()) continue;
        if (status == UCS_ERR_MESSAGE_TRUNCATED) {
          misuse = true;
          failed = strCat("rank ", m.peer, " sent more than the ", m.bytes,
                          " bytes this rank's matching receive expects");
        } else if (status != UCS_OK) {
          failed = strCat("the ucx ", describe(m), " failed: ", statusText(api, status));
        } else if (length != m.bytes) {
          misuse = true;
          failed = strCat("rank ", m.peer, " sent ", length, " bytes where this rank's matching ",
                          "receive expects ", m.bytes);
        }
        if (!failed.empty()) failedMessage = &m;
      }
    }
    if (failedMessage != nullptr) {
      // A dead peer explains a failed message best; a size mismatch is the caller's.
      check(failedMessage->peer);
      if (misuse) throw InvalidUsage(strCat(what, ": ", failed));
      throw RemoteError(strCat(what, ": ", failed));
    }
    if (left == 0) break;
    if (moved) {
      backoff.reset();
    } else {
      backoff.pause();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now < nextCheck && !deadline.expired()) continue;
    nextCheck = now + kCheckPeriod;
    std::set<int> owing;
    const Message* first = nullptr;
    for (const Pending& p : pending) {
      if (p.request == nullptr) continue;
      if (first == nullptr) first = p.message;
      owing.insert(p.message->peer);
    }
    for (int peer : owing) {
      if (peer != rank_) check(peer);  // waiting on it: a blame is answered by pointing on
    }
    // Only messages to itself left: a failure another rank reported ends the wait now rather
    // than at the deadline.
    if (owing.size() == 1 && *owing.begin() == rank_) check(rank_);
    if (deadline.expired()) {
      throwTimeout(deadline,
                   strCat(what, "'s ", left, " message(s) over ucx to complete, the first the ",
                          describe(*first)),
                   first->peer == rank_ ? -1 : first->peer);
    }
  }
}

void UcxMessages::cancel(std::vector<Pending>& pending) {
  const UcpApi& api = worker_.api();
  // Receives are cancelled (their memory must not be written later); sends are left to
  // complete or to fail with their endpoint (UCX frees them then).
  auto l = worker_.lock();
  for (Pending& p : pending) {
    if (p.request == nullptr || p.message->send) continue;
    api.ucp_request_cancel(worker_.worker(), p.request);
  }
  const auto until = std::chrono::steady_clock::now() + kCancelWait;
  bool inFlight = true;
  while (inFlight && std::chrono::steady_clock::now() < until) {
    api.ucp_worker_progress(worker_.worker());
    inFlight = false;
    for (const Pending& p : pending) {
      if (p.request != nullptr && !p.message->send &&
          api.ucp_request_check_status(p.request) == UCS_INPROGRESS) {
        inFlight = true;
      }
    }
  }
  for (Pending& p : pending) {
    if (p.request == nullptr) continue;
    api.ucp_request_free(p.request);  // one still in flight is released once it completes
    p.request = nullptr;
  }
}

}  // namespace ctran::ucx
