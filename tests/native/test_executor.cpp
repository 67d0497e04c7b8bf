// rcclx_core/src/host/executor.hpp: tasks queued while a HeldWakeups lives wait for the one
// wake-up at its end (in order, nested holds included); a synchronous call is never held.
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "check.hpp"
#include "host/executor.hpp"

namespace {

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// An executor whose worker thread was started and is now asleep, waiting for tasks.
void startAndIdle(rcclx::Executor& executor) {
  executor.submit("start", 0, [] {}, /*async=*/true);
  executor.drain();
  sleepMs(5);  // the worker is back in its wait
}

}  // namespace

TEST_CASE("executor: a held wake-up comes when the hold ends") {
  rcclx::Executor executor;
  startAndIdle(executor);
  std::atomic<bool> ran{false};
  rcclx::WorkPtr work;
  {
    rcclx::Executor::HeldWakeups held(executor);
    work = executor.submit("held", 1, [&] { ran = true; }, /*async=*/true);
    sleepMs(50);
    CHECK_EQ(ran.load(), false);
  }
  work->wait();
  CHECK_EQ(ran.load(), true);
}

TEST_CASE("executor: nested holds wake once, after the outer one, in submission order") {
  rcclx::Executor executor;
  startAndIdle(executor);
  std::vector<int> order;  // written by the worker only
  std::atomic<int> count{0};
  auto record = [&](int i) {
    return [&order, &count, i] {
      order.push_back(i);
      ++count;
    };
  };
  rcclx::WorkPtr last;
  {
    rcclx::Executor::HeldWakeups outer(executor);
    executor.submit("a", 1, record(1), true);
    {
      rcclx::Executor::HeldWakeups inner(executor);
      executor.submit("b", 2, record(2), true);
    }
    sleepMs(50);
    CHECK_EQ(count.load(), 0);
    last = executor.submit("c", 3, record(3), true);
  }
  last->wait();
  CHECK_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST_CASE("executor: a synchronous call under a hold wakes the worker and returns") {
  rcclx::Executor executor;
  startAndIdle(executor);
  std::vector<int> order;
  {
    rcclx::Executor::HeldWakeups held(executor);
    executor.submit("queued", 1, [&] { order.push_back(1); }, true);
    // Queued behind the held task: runs on the worker, which it must wake.
    executor.submit("synchronous", 2, [&] { order.push_back(2); }, /*async=*/false);
    CHECK_EQ(order, (std::vector<int>{1, 2}));
  }
  executor.drain();
}
