"""What the scheduler did to a rank's process while one column of one size was timed (its
passes, warm-up and checks included): its threads' context switches (voluntary: a thread
waited; involuntary: it was preempted), their moves between CPUs, and the CPU the timing thread
ended on. ``rcclx-perf --repeat`` prints them for each size's
fastest and slowest run, so a slow run whose ranks were preempted, moved or sharing a CPU says
so. Linux's /proc and getrusage; where they are missing the record is empty."""

from __future__ import annotations

import os
import resource


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


def snapshot() -> dict:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "voluntary": usage.ru_nvcsw,
        "involuntary": usage.ru_nivcsw,
        "migrations": _migrations(),
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
