"""The cross-core handoff probe rcclx-perf records beside host timings
(rcclx_core._testing.cross_core_handoff, perf/sched.py): it measures, it refuses bad arguments
naming them, and a CPU that cannot answer ends in a TimeoutError, never a hang."""

from __future__ import annotations

import os
import time

import pytest

import rcclx_core as rc
from rcclx_core.perf import sched

two_cpus = pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs this process may use"
)


def _cpus() -> tuple[int, int]:
    a, b = sorted(os.sched_getaffinity(0))[:2]
    return a, b


@two_cpus
def test_round_trips_take_time_and_more_bytes_take_longer():
    a, b = _cpus()
    line = rc._testing.cross_core_handoff(a, b, 0, 200)
    block = rc._testing.cross_core_handoff(a, b, 1 << 20, 20)
    assert 0 < line < 1e6  # ns: under a millisecond per round trip on any machine
    assert block > line  # a MiB written and read both ways costs more than one cache line


@pytest.mark.parametrize(
    "args, named",
    [
        ((-1, 1), "cpu_a -1"),
        ((0, 0), "cpu_b 0"),
        ((0, 1, 12), "bytes 12"),
        ((0, 1, 0, 0), "rounds 0"),
        ((0, 1, 0, 10, 0.0), "timeout_s 0"),
    ],
)
def test_bad_arguments_are_refused_by_name(args, named):
    with pytest.raises(rc.InvalidArgumentError, match=named):
        rc._testing.cross_core_handoff(*args)


def test_a_cpu_outside_the_affinity_is_refused():
    allowed = os.sched_getaffinity(0)
    outside = next(c for c in range(1024) if c not in allowed)
    inside = min(allowed)
    with pytest.raises(rc.InvalidArgumentError, match=f"cpu {outside} is not one"):
        rc._testing.cross_core_handoff(inside, outside, 0, 10)


@two_cpus
def test_rounds_past_the_deadline_end_in_a_timeout():
    a, b = _cpus()
    start = time.monotonic()
    with pytest.raises(rc.TimeoutError, match="did not finish"):
        rc._testing.cross_core_handoff(a, b, 0, 10**12, 0.05)
    assert time.monotonic() - start < 5


@two_cpus
def test_the_link_record_names_its_cpus_and_both_figures():
    link = sched.cross_core_link()
    assert link["cpus"] == list(_cpus())
    assert link["round_trip_ns"] > 0 and link["handoff_64k_us"] > 0
