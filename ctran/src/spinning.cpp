// Implementation of spinning.hpp.
#include "spinning.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>

#include "ctran/config.hpp"

namespace ctran {
namespace {

constexpr int64_t kLookEveryNs = 1'000'000;  // a look costs a read of /proc/loadavg
constexpr int64_t kBusyHoldNs = 20'000'000;  // a busy verdict stands this long unrenewed
// A yield that returns later than this ran another thread on this core (alone, one takes
// well under a microsecond).
constexpr int64_t kYieldRanOtherNs = 3'000;
// At most one try to leave a shared core per 100 us: a burst of small calls lasts about a
// millisecond, and ranks that shared a core for want of more tries stayed 3-5x slower for all of
// it (docs/measurements/2026-12-06_cpu_cross_core_link.md).
constexpr int64_t kMoveEveryNs = 100'000;

std::atomic<int64_t> g_busyUntilNs{0};
std::atomic<int64_t> g_lastLookNs{0};
std::atomic<int64_t> g_lastMoveNs{0};

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The kernel's count of runnable threads on every core, this one included (the fourth field of
// /proc/loadavg, "running/total"); -1 when it cannot be read.
int runnableThreads() {
  // Opened per look (at most once per millisecond): a descriptor held for the process's life
  // would be one more the caller did not open.
  const int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* p = buf;
  for (int field = 0; field < 3 && p != nullptr; ++field) {
    while (*p != '\0' && *p != ' ') ++p;
    while (*p == ' ') ++p;
  }
  return *p != '\0' ? std::atoi(p) : -1;
}

int onlineCores() {
  static const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return cores;
}

// Moves the calling thread to another core of its affinity mask: the kernel migrates a thread
// at once when its core leaves the mask, and restoring the mask leaves it where it went.
void moveOffThisCore() {
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof(mine), &mine) != 0 || CPU_COUNT(&mine) < 2) return;
  const int here = sched_getcpu();
  if (here < 0 || !CPU_ISSET(here, &mine)) return;
  cpu_set_t elsewhere = mine;
  CPU_CLR(here, &elsewhere);
  if (sched_setaffinity(0, sizeof(elsewhere), &elsewhere) == 0) {
    sched_setaffinity(0, sizeof(mine), &mine);
  }
}

}  // namespace

int64_t spinBudgetUs() {
  return nowNs() < g_busyUntilNs.load(std::memory_order_relaxed) ? knob::RCCLX_SPIN_BUSY_US()
                                                                 : knob::RCCLX_SPIN_US();
}

void spinRanOut() {
  const int64_t now = nowNs();
  int64_t last = g_lastLookNs.load(std::memory_order_relaxed);
  if (now - last < kLookEveryNs) return;
  if (!g_lastLookNs.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  if (runnableThreads() > onlineCores()) {
    g_busyUntilNs.store(now + kBusyHoldNs, std::memory_order_relaxed);
  }
}

void yieldCore() {
  const int64_t before = nowNs();
  sched_yield();
  const int64_t after = nowNs();
  if (after - before < kYieldRanOtherNs) return;
  int64_t last = g_lastMoveNs.load(std::memory_order_relaxed);
  if (after - last < kMoveEveryNs) return;
  if (!g_lastMoveNs.compare_exchange_strong(last, after, std::memory_order_relaxed)) return;
  // Moving helps only where a core is idle: on a busy machine every core has work.
  if (!knob::RCCLX_LEAVE_SHARED_CORE() || runnableThreads() > onlineCores()) return;
  // Both threads on the core see the other's yield: were both to move, they could land on one
  // core again. Each moves on a coin toss (the clock's microseconds), so one soon stays.
  if (((after / 1000) & 1) == 0) moveOffThisCore();
}

}  // namespace ctran
