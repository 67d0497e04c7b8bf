// Executor: runs a communicator's operations in submission order, on the caller's thread
// when nothing is pending (the synchronous fast path) or on one worker thread otherwise.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "rcclx/work.hpp"

namespace rcclx {

class Executor {
 public:
  ~Executor();
  /// Runs `fn`. Synchronous: returns once done (rethrowing its error). Asynchronous: returns
  /// at once; the Work completes later.
  WorkPtr submit(std::string description, std::function<void()> fn, bool async);
  /// Waits until everything submitted so far has run.
  void drain();
  /// Drains, then stops the worker thread.
  void stop();

 private:
  struct Task {
    WorkPtr work;
    std::function<void()> fn;
  };
  void workerLoop();

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Task> queue_;
  bool running_ = false;  // the worker is executing a task
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace rcclx
