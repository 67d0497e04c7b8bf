// Executor: runs a communicator's operations in submission order, on the caller's thread
// when nothing is pending (the synchronous fast path) or on one worker thread otherwise.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "rcclx/work.hpp"

namespace rcclx {

class Executor {
 public:
  ~Executor();
  /// Runs `fn` (an operation named `what` #`seq`, see Work). Synchronous: returns nullptr once
  /// done, rethrowing its error; with nothing pending it runs on the caller's thread, without
  /// allocating. Asynchronous: returns at once; the Work completes later.
  template <typename Fn>
  WorkPtr submit(const char* what, uint64_t seq, Fn&& fn, bool async) {
    if (!async && enterInline()) {
      InlineRun run(*this);
      fn();
      return nullptr;
    }
    return enqueue(what, seq, std::function<void()>(std::forward<Fn>(fn)), async);
  }
  /// While one lives, tasks queued for the worker do not wake it: the worker is woken once,
  /// when the last one ends. A caller queuing several tasks (the staged device back-end's gate,
  /// host part and publish) then pays for one wake-up, and adding the later tasks does not
  /// contend for the queue with a worker already running the first. A synchronous call still
  /// wakes it (its caller waits for it).
  class HeldWakeups {
   public:
    explicit HeldWakeups(Executor& executor);
    ~HeldWakeups();
    HeldWakeups(const HeldWakeups&) = delete;
    HeldWakeups& operator=(const HeldWakeups&) = delete;

   private:
    Executor& executor_;
  };

  /// Waits until everything submitted so far has run.
  void drain();
  /// Drains, waits for a synchronous call running on its caller's thread (another thread may
  /// be aborting the communicator under it: its memory stays until the call left), then stops
  /// the worker thread.
  void stop();

 private:
  struct Task {
    WorkPtr work;
    std::function<void()> fn;
  };
  void workerLoop();
  /// Marks a synchronous call as running on its caller's thread when nothing is queued or
  /// running and the executor is not stopping; false otherwise (the call is queued).
  bool enterInline();
  void leaveInline();
  struct InlineRun {  // leaves on return and on a throw
    explicit InlineRun(Executor& e) : executor(e) {}
    ~InlineRun() { executor.leaveInline(); }
    Executor& executor;
  };
  WorkPtr enqueue(const char* what, uint64_t seq, std::function<void()> fn, bool async);

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Task> queue_;
  bool running_ = false;  // the worker is executing a task
  bool inline_ = false;   // a synchronous call runs on its caller's thread
  bool stopping_ = false;
  int heldWakeups_ = 0;     // HeldWakeups alive
  bool wakeupDue_ = false;  // a task was queued while they held the wake-ups
  std::thread worker_;
};

}  // namespace rcclx
