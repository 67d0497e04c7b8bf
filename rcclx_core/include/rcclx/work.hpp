// Work: the handle of one submitted operation (completed already for synchronous calls).
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
  explicit Work(std::string description) : description_(std::move(description)) {}

  /// True once the operation finished (successfully or not).
  bool isCompleted() const;
  /// Waits for completion and rethrows the operation's error, if any. With timeoutMs >= 0,
  /// throws TimeoutError if it has not completed by then (the operation keeps running).
  void wait(int64_t timeoutMs = -1);
  const std::string& description() const { return description_; }

  /// Called by the executor.
  void complete(std::exception_ptr error);

 private:
  std::string description_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  bool completed_ = false;
  std::exception_ptr error_;
};

using WorkPtr = std::shared_ptr<Work>;

}  // namespace rcclx
