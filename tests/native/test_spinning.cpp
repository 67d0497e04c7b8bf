// ctran/src/spinning.hpp: a wait spins RCCLX_SPIN_US while the machine has a core for every
// runnable thread, RCCLX_SPIN_BUSY_US once a spin that ran out found more runnable threads than
// cores, and back to RCCLX_SPIN_US when no spin renews that verdict.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "check.hpp"
#include "spinning.hpp"

namespace {

// Threads that keep every core busy, and one more, until destroyed.
class Hogs {
 public:
  Hogs() {
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i <= cores; ++i) {
      threads_.emplace_back([this] {
        while (!stop_.load(std::memory_order_relaxed)) {
        }
      });
    }
  }
  ~Hogs() {
    stop_.store(true);
    for (auto& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

void sleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST_CASE("spin budget: more runnable threads than cores shorten the spin, for a while") {
  check::ScopedEnv spin("RCCLX_SPIN_US", "50");
  check::ScopedEnv busy("RCCLX_SPIN_BUSY_US", "7");
  {
    Hogs hogs;
    sleepMs(20);  // the hogs are runnable by now
    // A look is taken at most once per millisecond; the kernel's count is a snapshot, so
    // allow several looks.
    for (int i = 0; i < 200 && ctran::spinBudgetUs() != 7; ++i) {
      ctran::spinRanOut();
      sleepMs(2);
    }
    CHECK_EQ(ctran::spinBudgetUs(), 7);
  }
  // Nothing renews the verdict: it lapses (20 ms) and waits spin their full budget again.
  sleepMs(40);
  CHECK_EQ(ctran::spinBudgetUs(), 50);
}

TEST_CASE("spin budget: the knobs are read when the budget is asked for") {
  check::ScopedEnv spin("RCCLX_SPIN_US", "123");
  CHECK_EQ(ctran::spinBudgetUs(), 123);
}
