"""tools/multihost_perf.py: rcclx-perf with its ranks on test hosts (2 hosts x 1 rank, so the
only path between them is the veths) next to Gloo on the same data, every result checked."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import hosts
import pytest

pytestmark = pytest.mark.multihost

TOOL = Path(__file__).resolve().parents[2] / "tools" / "multihost_perf.py"


def test_rcclx_perf_across_test_hosts_against_gloo():
    reason = hosts.unavailable_reason()
    if reason:
        pytest.skip(reason)
    perf = ["--device", "cpu", "--collective", "all_reduce", "--compare", "gloo"]
    perf += ["-b", "4K", "-e", "64K", "-f", "16", "-n", "2", "-w", "1"]
    argv = [sys.executable, str(TOOL), "--hosts", "2", "--ranks-per-host", "1", "--timeout", "90"]
    out = subprocess.run(
        [*argv, "--", *perf], capture_output=True, text=True, timeout=150, check=False
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 test hosts x 1 ranks" in out.stdout, out.stdout
    assert "2 ranks (torchrun)" in out.stdout, out.stdout
    rows = [line for line in out.stdout.splitlines() if re.match(r"^ +(4096|65536) ", line)]
    assert len(rows) == 2, out.stdout  # one row per size: auto, with the gloo columns
    assert all(len(r.split()) == 10 for r in rows), rows  # ..., gloo(us), ours/gloo
    assert "# gloo wrong values: 0" in out.stdout, out.stdout
    assert "Out of bounds values : 0 OK" in out.stdout, out.stdout
