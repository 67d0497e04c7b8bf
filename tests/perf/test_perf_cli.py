"""rcclx-perf end to end (the command as a subprocess, real rank processes, tiny sizes), and its
check on deliberately corrupted results (the check must notice what a broken collective does).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from rcclx_core.perf import check
from rcclx_core.perf.spec import Config

COLUMNS = ["size", "count", "type", "algo", "time", "algbw", "busbw", "wrong", "gloo", "speedup"]


def perf(tmp_path, *args: str, expect: int = 0) -> tuple[list[dict], str]:
    """Runs ``rcclx-perf args`` and returns its table rows (as dicts) and its whole output."""
    proc = subprocess.run(
        [sys.executable, "-m", "rcclx_core.perf", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == expect, out
    rows = [
        dict(zip(COLUMNS, line.split()))
        for line in proc.stdout.splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return rows, out


def test_all_reduce_every_algorithm_checked_and_written_as_json(tmp_path):
    args = ["-b", "64", "-e", "4K", "-n", "5", "-w", "1", "-g", "2", "--algo", "all"]
    rows, out = perf(tmp_path, *args, "--json", "out.json")
    sizes, per_size = [64, 256, 1024, 4096], len(rows) // 4
    assert [int(r["size"]) for r in rows] == [s for s in sizes for _ in range(per_size)], out
    algos = [r["algo"] for r in rows[:per_size]]
    assert {"ring", "dda_flat", "dda_tree"} <= set(algos), out
    assert algos[-1] == "auto(dda_flat)"  # 64 bytes: the selector's flat range
    assert all(r["wrong"] == "0" and float(r["time"]) > 0 for r in rows), out
    assert all(int(r["count"]) * 4 == int(r["size"]) for r in rows)
    assert "# Out of bounds values : 0 OK" in out

    doc = json.loads((tmp_path / "out.json").read_text())
    timed = [r for r in doc["rows"] if "skipped" not in r]  # e.g. GPU-only algorithms
    assert doc["nranks"] == 2 and len(timed) == len(rows)
    assert doc["summary"]["wrong"] == 0
    for r in timed:
        assert r["wrong"] == 0
        assert r["time"] == r["mean"] >= r["min"] > 0
        assert r["algbw"] == pytest.approx(r["size"] / r["time"] / 1e3)
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * (2 - 1) / 2)


@pytest.mark.parametrize(
    "collective, dtype, redop",
    [
        ("all_gather", "float16", None),
        ("reduce_scatter", "bfloat16", "max"),
        ("all_to_all", "int32", None),
        ("broadcast", "float64", None),
        ("reduce", "int8", "prod"),
    ],
)
def test_other_collectives_on_three_ranks(tmp_path, collective, dtype, redop):
    args = ["--collective", collective, "-d", dtype, "-b", "96", "-e", "6K", "-n", "2", "-w", "0"]
    rows, out = perf(tmp_path, *args, *(["--redop", redop] if redop else []), "-g", "3")
    assert len(rows) == 4 and all(r["wrong"] == "0" and r["type"] == dtype for r in rows), out
    # the size column is the larger per-rank buffer: nranks blocks of count where there are blocks
    blocks = 3 if collective in ("all_gather", "reduce_scatter", "all_to_all") else 1
    itemsize = np.dtype(Config(datatype=dtype).dtype.storage).itemsize
    assert all(int(r["size"]) == int(r["count"]) * blocks * itemsize for r in rows)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
def test_compare_gloo_adds_time_and_speedup(tmp_path):
    args = ["-b", "1K", "-e", "16K", "-n", "3", "-w", "1", "--compare", "gloo", "--median"]
    rows, out = perf(tmp_path, *args, "--json", "out.json")
    assert len(rows) == 3 and all(r["wrong"] == "0" for r in rows), out
    for r in rows:
        assert float(r["speedup"]) == pytest.approx(float(r["gloo"]) / float(r["time"]), rel=0.02)
    assert "# gloo wrong values    : 0" in out
    doc = json.loads((tmp_path / "out.json").read_text())
    assert all(r["time"] == r["median"] and r["gloo"]["wrong"] == 0 for r in doc["rows"])


def test_bad_command_lines_exit_2(tmp_path):
    _, out = perf(tmp_path, "--collective", "all_gather", "--algo", "ring", expect=2)
    assert "--algo applies to all_reduce only" in out
    _, out = perf(tmp_path, "-b", "1x", expect=2)
    assert "not a byte size" in out


@pytest.mark.parametrize("datatype", ["float16", "bfloat16", "int32"])
def test_check_counts_what_a_broken_all_reduce_gets_wrong(datatype):
    cfg, n, count = Config(datatype=datatype), 4, 1000
    dt = cfg.dtype
    inputs = [check.to_float64(check.send_buffer(cfg, n, r, count), dt) for r in range(n)]
    good = check.to_storage(sum(inputs), dt)
    assert check.count_wrong(cfg, n, 0, count, good) == 0

    off_by_one = good.copy()
    off_by_one[[0, 17, 999]] = check.to_storage(check.to_float64(good[[0, 17, 999]], dt) + 1, dt)
    assert check.count_wrong(cfg, n, 0, count, off_by_one) == 3
    missing_rank = check.to_storage(sum(inputs[:-1]), dt)
    assert check.count_wrong(cfg, n, 0, count, missing_rank) == np.count_nonzero(inputs[-1])
    never_written = check.poison(good.copy())
    assert check.count_wrong(cfg, n, 0, count, never_written) == count


def test_check_counts_misplaced_all_to_all_blocks():
    cfg, n, count, rank = Config(collective="all_to_all", datatype="float32"), 3, 50, 1
    sends = [check.send_buffer(cfg, n, r, count).reshape(n, count) for r in range(n)]
    good = np.concatenate([sends[src][rank] for src in range(n)])
    assert check.count_wrong(cfg, n, rank, count, good) == 0
    swapped = np.concatenate([sends[src][rank] for src in (1, 0, 2)])
    assert check.count_wrong(cfg, n, rank, count, swapped) == 2 * count
