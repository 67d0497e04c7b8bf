// Implementation of executor.hpp and work.hpp.
#include "host/executor.hpp"

#include <chrono>
#include <utility>

#include "ctran/checks.hpp"
#include "ctran/logging.hpp"

namespace rcclx {

std::string Work::description() const {
  return seq_ == 0 ? std::string(what_) : ctran::strCat(what_, " #", seq_);
}

bool Work::isCompleted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_;
}

void Work::wait(int64_t timeoutMs) {
  std::unique_lock<std::mutex> lock(mu_);
  if (timeoutMs < 0) {
    done_.wait(lock, [&] { return completed_; });
  } else if (!done_.wait_for(lock, std::chrono::milliseconds(timeoutMs),
                             [&] { return completed_; })) {
    throw ctran::TimeoutError(ctran::strCat(description(), ": not completed after ", timeoutMs,
                                            " ms (the operation is still running)"));
  }
  if (error_) std::rethrow_exception(error_);
}

void Work::complete(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    completed_ = true;
    error_ = std::move(error);
  }
  done_.notify_all();
}

Executor::~Executor() {
  try {
    stop();
  } catch (const std::exception& e) {
    CTRAN_WARN("executor stop: ", e.what());
  }
}

bool Executor::enterInline() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!queue_.empty() || running_ || inline_ || stopping_) return false;
  inline_ = true;
  return true;
}

void Executor::leaveInline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    inline_ = false;
  }
  changed_.notify_all();
}

WorkPtr Executor::enqueue(const char* what, uint64_t seq, std::function<void()> fn, bool async) {
  auto work = std::make_shared<Work>(what, seq);
  std::unique_lock<std::mutex> lock(mu_);
  CTRAN_CHECK(!stopping_, ctran::InvalidUsage, work->description(),
              ": the communicator was destroyed");
  if (!worker_.joinable()) {
    // The worker's log lines name the rank of the thread that started it (a process may run
    // several ranks, one thread each).
    worker_ = std::thread([this, rank = ctran::log::rank()] {
      ctran::log::setThreadRank(rank);
      workerLoop();
    });
  }
  queue_.push_back({work, std::move(fn)});
  const bool held = async && heldWakeups_ > 0;
  wakeupDue_ |= held;
  lock.unlock();
  if (!held) changed_.notify_all();
  if (async) return work;
  work->wait();
  return nullptr;
}

void Executor::workerLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    Task task = std::move(queue_.front());
    queue_.pop_front();
    running_ = true;
    lock.unlock();
    std::exception_ptr error;
    try {
      task.fn();
    } catch (...) {
      error = std::current_exception();
    }
    task.work->complete(error);
    lock.lock();
    running_ = false;
    changed_.notify_all();
  }
}

Executor::HeldWakeups::HeldWakeups(Executor& executor) : executor_(executor) {
  std::lock_guard<std::mutex> lock(executor_.mu_);
  ++executor_.heldWakeups_;
}

Executor::HeldWakeups::~HeldWakeups() {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(executor_.mu_);
    if (--executor_.heldWakeups_ == 0) wake = std::exchange(executor_.wakeupDue_, false);
  }
  if (wake) executor_.changed_.notify_all();
}

void Executor::drain() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [&] { return queue_.empty() && !running_ && !inline_; });
}

void Executor::stop() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
    changed_.wait(lock, [&] { return !inline_; });
    if (!worker_.joinable()) return;
  }
  worker_.join();
}

}  // namespace rcclx
