// UcxMessages: the ucx transport's two-sided messages (Messages in transport.hpp) on UCX's
// tagged API, so that UCX moves each buffer itself, whatever memory it is in: for GPU memory,
// GPUDirect RDMA where the NIC allows, cuda_ipc between processes of one host, its own
// pipelined copies through host memory otherwise. UCX finds each buffer's memory type itself.
//
// Matching: a message's tag is its sender's rank (high 24 bits) and the number of messages that
// sender issued to the same receiver before it (low 40 bits); a receive asks for exactly that
// tag. So the n-th send from a rank to a peer meets the peer's n-th receive from it, whatever
// else is in flight. A rank's messages to itself go through an endpoint to its own worker.
//
// Waiting: exchange() issues the whole batch, then progresses the worker (under its lock, as
// every UCP call) and polls the requests with a Backoff, checking the peers still owed a message
// (this rank when only messages to itself are left) every millisecond; on any error it cancels what
// is pending.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "ctran/transport.hpp"
#include "ucx_worker.hpp"

namespace ctran::ucx {

class UcxMessages final : public Messages {
 public:
  /// Messages of rank `rank` over `worker`, whose endpoint to rank r is `endpoints[r]` (null
  /// where r is not reached over ucx; this rank's own is made here). `deviceMemory`: what every
  /// rank agreed (movesDeviceMemory()).
  UcxMessages(UcxWorker& worker, int rank, std::vector<ucp_ep_h> endpoints, bool deviceMemory);
  /// Closes the endpoint to this rank (before the worker goes).
  ~UcxMessages() override;
  UcxMessages(const UcxMessages&) = delete;
  UcxMessages& operator=(const UcxMessages&) = delete;

  bool movesDeviceMemory() const override { return deviceMemory_; }
  void exchange(const std::vector<Message>& batch, const Deadline& deadline,
                const std::function<void(int)>& check, const char* what) override;

 private:
  struct Pending {
    const Message* message;
    ucs_status_ptr_t request;  ///< null once completed and freed
  };
  /// Issues every message of `batch` into `pending` (under the worker lock).
  void issue(const std::vector<Message>& batch, std::vector<Pending>& pending, const char* what);
  /// Waits until every request of `pending` completed (see exchange()).
  void awaitAll(std::vector<Pending>& pending, const Deadline& deadline,
                const std::function<void(int)>& check, const char* what);
  /// Cancels and frees the requests of `pending` still in flight.
  void cancel(std::vector<Pending>& pending);

  UcxWorker& worker_;
  int rank_;
  std::vector<ucp_ep_h> endpoints_;  // by rank; [rank_] is the endpoint to this rank
  bool deviceMemory_;
  std::mutex mu_;                   // one exchange at a time: the counters advance in issue order
  std::vector<uint64_t> sent_;      // by peer: messages issued to it
  std::vector<uint64_t> received_;  // by peer: receives issued from it
};

}  // namespace ctran::ucx
