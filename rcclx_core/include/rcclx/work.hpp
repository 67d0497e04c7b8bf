// Work: the handle of one asynchronous operation on host buffers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

namespace rcclx {

class Work {
 public:
  /// `what` names the operation ("all_reduce", "send"; a string that outlives the Work), `seq`
  /// its number on the communicator (0: none); description() formats them when asked.
  Work(const char* what, uint64_t seq) : what_(what), seq_(seq) {}

  /// True once the operation finished (successfully or not).
  bool isCompleted() const;
  /// Waits for completion and rethrows the operation's error, if any. With timeoutMs >= 0,
  /// throws TimeoutError if it has not completed by then (the operation keeps running).
  void wait(int64_t timeoutMs = -1);
  /// "all_reduce #12", "send".
  std::string description() const;

  /// Called by the executor.
  void complete(std::exception_ptr error);

 private:
  const char* what_;
  uint64_t seq_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  bool completed_ = false;
  std::exception_ptr error_;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace rcclx
