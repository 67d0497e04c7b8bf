// rcclx_core._C._testing.cross_core_handoff: how fast one CPU sees another's writes, measured
// beside rcclx-perf's timings. A host collective between ranks on different CPUs is, at small
// and in-cache sizes, a chain of such handoffs, so its time follows this figure. On a virtual
// machine the figure depends on where the host runs the vCPUs (two threads of one core, cores
// sharing a cache, different dies), which the guest cannot see and which changes while it runs:
// docs/measurements/2026-12-06_cpu_cross_core_link.md.
#include <pthread.h>
#include <pybind11/pybind11.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "ctran/checks.hpp"

namespace py = pybind11;

namespace rcclx::python {
namespace {

using Clock = std::chrono::steady_clock;

/// One round trip of the probe: the writer fills the buffer (when it has bytes) and raises
/// `ping`; the reader waits for it, reads the buffer and answers on `pong`.
struct Handoff {
  alignas(64) std::atomic<int64_t> ping{0};
  alignas(64) std::atomic<int64_t> pong{0};
  alignas(64) std::atomic<bool> stop{false};
  std::atomic<int> pinned{0};
  std::atomic<int> failedCpu{-1};
  std::vector<uint64_t> buffer;
  std::atomic<uint64_t> checksum{0};
  Clock::time_point deadline;
};

bool pinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

/// Spins until `word` holds `value`; false when the probe stopped or ran past its deadline (a
/// thread that cannot run must not hang the caller).
bool spinUntil(Handoff& h, const std::atomic<int64_t>& word, int64_t value) {
  for (uint32_t n = 1;; ++n) {
    if (word.load(std::memory_order_acquire) == value) return true;
    if ((n & 1023) == 0 && (h.stop.load(std::memory_order_relaxed) || Clock::now() > h.deadline)) {
      h.stop.store(true, std::memory_order_relaxed);
      return false;
    }
  }
}

/// Both threads pinned, or false (the probe then stops): a CPU refused, or the other thread
/// did not get to run before the deadline.
bool pinAndMeet(Handoff& h, int cpu) {
  if (!pinTo(cpu)) {
    h.failedCpu.store(cpu);
    h.stop.store(true);
    return false;
  }
  h.pinned.fetch_add(1);
  while (h.pinned.load() < 2) {
    if (h.stop.load() || Clock::now() > h.deadline) {
      h.stop.store(true);
      return false;
    }
    std::this_thread::yield();
  }
  return true;
}

void reader(Handoff& h, int cpu, int64_t rounds) {
  if (!pinAndMeet(h, cpu)) return;
  uint64_t sum = 0;
  for (int64_t i = 1; i <= rounds; ++i) {
    if (!spinUntil(h, h.ping, i)) return;
    for (uint64_t word : h.buffer) sum += word;
    h.pong.store(i, std::memory_order_release);
  }
  h.checksum.store(sum, std::memory_order_relaxed);  // keeps the reads
}

/// Mean round trip in ns over `rounds` after as many to warm up, the writer on `cpuA`, the
/// reader on `cpuB`.
double measure(int cpuA, int cpuB, size_t bytes, int64_t rounds, double timeoutS) {
  Handoff h;
  h.buffer.assign(bytes / sizeof(uint64_t), 0);
  h.deadline = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutS));
  double ns = -1;
  std::thread peer(reader, std::ref(h), cpuB, 2 * rounds);
  std::thread writer([&] {
    if (!pinAndMeet(h, cpuA)) return;
    // The first `rounds` only warm up: an idle vCPU takes a while to run at full speed, and
    // the first rounds run several times slower than the rest.
    auto start = Clock::now();
    for (int64_t i = 1; i <= 2 * rounds; ++i) {
      if (i == rounds + 1) start = Clock::now();
      if (!h.buffer.empty()) std::memset(h.buffer.data(), static_cast<int>(i), bytes);
      h.ping.store(i, std::memory_order_release);
      if (!spinUntil(h, h.pong, i)) return;
    }
    ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() /
         static_cast<double>(rounds);
  });
  writer.join();
  peer.join();
  if (h.failedCpu.load() >= 0) {
    throw ctran::InvalidArgument(ctran::strCat("cross_core_handoff: cpu ", h.failedCpu.load(),
                                               " is not one this process may run on"));
  }
  if (ns < 0) {
    throw ctran::TimeoutError(ctran::strCat("cross_core_handoff: CPUs ", cpuA, " and ", cpuB,
                                            " did not finish ", 2 * rounds, " round trips within ",
                                            timeoutS, " s"));
  }
  return ns;
}

}  // namespace

void registerMachineProbe(py::module_& m) {
  m.def(
      "cross_core_handoff",
      [](int cpuA, int cpuB, size_t bytes, int64_t rounds, double timeoutS) {
        if (cpuA < 0 || cpuA >= CPU_SETSIZE) {
          throw ctran::InvalidArgument(
              ctran::strCat("cross_core_handoff: cpu_a ", cpuA, " is not a CPU number"));
        }
        if (cpuB < 0 || cpuB >= CPU_SETSIZE || cpuB == cpuA) {
          throw ctran::InvalidArgument(ctran::strCat("cross_core_handoff: cpu_b ", cpuB,
                                                     " must be a CPU number other than cpu_a"));
        }
        if (rounds < 1) {
          throw ctran::InvalidArgument(
              ctran::strCat("cross_core_handoff: rounds ", rounds, " must be at least 1"));
        }
        if (bytes % sizeof(uint64_t) != 0 || bytes > (size_t{64} << 20)) {
          throw ctran::InvalidArgument(ctran::strCat("cross_core_handoff: bytes ", bytes,
                                                     " must be a multiple of 8 up to 64 MiB"));
        }
        if (!(timeoutS > 0)) {
          throw ctran::InvalidArgument(
              ctran::strCat("cross_core_handoff: timeout_s ", timeoutS, " must be positive"));
        }
        py::gil_scoped_release nogil;
        return measure(cpuA, cpuB, bytes, rounds, timeoutS);
      },
      py::arg("cpu_a"), py::arg("cpu_b"), py::arg("bytes") = 0, py::arg("rounds") = 1000,
      py::arg("timeout_s") = 1.0,
      "Mean round trip in ns (over `rounds`, after as many to warm up) between a thread on "
      "cpu_a that writes `bytes` and raises a flag and a thread on cpu_b that waits for it, "
      "reads them and answers (bytes 0: one cache line each way). Raises TimeoutError when the "
      "rounds take longer than timeout_s (a CPU too busy to run its thread).");
}

}  // namespace rcclx::python
