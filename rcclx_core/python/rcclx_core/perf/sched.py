"""What the scheduler did to a rank's process while one column of one size was timed (its
passes, warm-up and checks included): its threads' context switches (voluntary: a thread
waited; involuntary: it was preempted), their moves between CPUs, the CPU the timing thread
ended on, and the machine's steal time (a virtual machine's CPUs held back by its host).
``rcclx-perf --repeat`` prints them for each size's fastest and slowest run, so a slow run whose
ranks were preempted, moved or sharing a CPU says so. Linux's /proc and getrusage; where they
are missing the record is empty.

For runs on host memory, rank 0 also measures after each size how fast two CPUs hand data to
each other (``cross_core_link``): a host collective's small and in-cache sizes are chains of such
handoffs, and on a virtual machine their speed moves by several times with where the host runs
the vCPUs, which nothing inside the machine can see or change."""

from __future__ import annotations

import os
import resource

from rcclx_core import Error, _testing


def _migrations() -> int | None:
    """Moves between CPUs of the process's live threads (the kernel's se.nr_migrations)."""
    total = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/sched") as f:
                for line in f:
                    if line.startswith("se.nr_migrations"):
                        total += int(line.split(":")[1])
                        break
        except (OSError, ValueError):
            continue  # the thread ended, or the kernel lacks the field
    return total


def _cpu() -> int | None:
    """The CPU this thread last ran on (field 39 of /proc/thread-self/stat)."""
    try:
        with open("/proc/thread-self/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[36])


def _steal_ms() -> int | None:
    """Time the hypervisor ran something else while this machine's CPUs had work, summed over
    the CPUs, in ms (the steal field of /proc/stat's first line, in USER_HZ ticks)."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000 // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def snapshot() -> dict:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "voluntary": usage.ru_nvcsw,
        "involuntary": usage.ru_nivcsw,
        "migrations": _migrations(),
        "steal_ms": _steal_ms(),
    }


def since(before: dict) -> dict:
    """The counts since `before` (a snapshot()), and the CPU this thread is on now."""
    now = snapshot()
    out = {}
    for key, value in now.items():
        if value is not None and before.get(key) is not None:
            out[key] = value - before[key]
    cpu = _cpu()
    if cpu is not None:
        out["cpu"] = cpu
    return out


def add(total: dict | None, more: dict) -> dict:
    """`more` (a since() record) added to `total`; the CPU is the latest."""
    if total is None:
        return dict(more)
    out = {k: total.get(k, 0) + v for k, v in more.items() if k != "cpu"}
    if "cpu" in more:
        out["cpu"] = more["cpu"]
    return out


def cross_core_link() -> dict:
    """How fast the first two CPUs this process may use hand data over (both spinning): the
    round trip of one cache line each way (ns) and of 64 KiB written by one and read by the
    other (us); {} with fewer than two CPUs, or when a CPU was too busy to answer."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        return {}
    a, b = cpus[:2]
    try:
        line_ns = _testing.cross_core_handoff(a, b, 0, 1000)
        block_ns = _testing.cross_core_handoff(a, b, 64 << 10, 200)
    except Error:
        return {}
    return {"cpus": [a, b], "round_trip_ns": line_ns, "handoff_64k_us": block_ns / 1e3}
