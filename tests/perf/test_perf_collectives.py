"""rcclx-perf end to end on CPU ranks for the collectives beyond nccl-tests' first six
(all_to_all_v, send_recv, gather, scatter), the in-place layouts, Gloo on the new collectives
and the low-precision path (its max-error column and bound)."""

from __future__ import annotations

import importlib.util

import pytest
from perf_runs import perf_json

from rcclx_core.perf import check
from rcclx_core.perf.spec import Config

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
QUICK = ("-n", "2", "-w", "0")


@pytest.mark.parametrize(
    "collective, dtype, units",
    [
        ("all_to_all_v", "bfloat16", 6),  # 3 ranks: count * (1 + 2 + 3)
        ("alltoallv_dynamic", "float32", 6),  # all_to_all_v's blocks, counts in arrays
        ("send_recv", "int64", 1),
        ("gather", "uint8", 3),
        ("scatter", "float32", 3),
    ],
)
def test_new_collectives_on_three_ranks(tmp_path, collective, dtype, units):
    args = ["--collective", collective, "-d", dtype, "-b", "96", "-e", "6K", "-g", "3", *QUICK]
    rows, out, doc = perf_json(tmp_path, *args)
    assert len(rows) == 4 and all(r["#wrong"] == "0" and r["type"] == dtype for r in rows), out
    itemsize = Config(datatype=dtype).dtype.itemsize
    assert all(int(r["size(B)"]) == int(r["count(elems)"]) * units * itemsize for r in rows)
    factor = 1.0 if collective == "send_recv" else 2 / 3
    for r in doc["rows"]:
        assert r["busbw"] == pytest.approx(r["algbw"] * factor)


@pytest.mark.parametrize(
    "collective, extra",
    [
        ("all_reduce", ["--algo", "all"]),
        ("all_gather", []),
        ("reduce_scatter", ["--redop", "min"]),
        ("all_to_all", []),
        ("broadcast", []),
        ("reduce", []),
        ("gather", []),
        ("scatter", []),
    ],
)
def test_inplace_layouts_are_checked(tmp_path, collective, extra):
    args = ["--collective", collective, "--inplace", "-b", "256", "-e", "4K", "-g", "3", *QUICK]
    rows, out, doc = perf_json(tmp_path, *args, *extra)
    assert rows and all(r["#wrong"] == "0" for r in rows), out
    assert "# layout: in place" in out and doc["inplace"] is True


@needs_torch
@pytest.mark.parametrize("collective", ["all_to_all_v", "send_recv", "gather", "scatter"])
def test_compare_gloo_on_the_new_collectives(tmp_path, collective):
    args = ["--collective", collective, "-b", "1K", "-e", "4K", "--compare", "gloo", *QUICK]
    rows, out, doc = perf_json(tmp_path, *args)
    assert len(rows) == 2 and all(r["#wrong"] == "0" for r in rows), out
    assert all(float(r["gloo(us)"]) > 0 and float(r["ours/gloo"]) > 0 for r in rows), out
    assert all(r["peers"]["gloo"]["wrong"] == 0 for r in doc["rows"])  # gloo checked too


@pytest.mark.parametrize(
    "collective, dtype",
    [
        ("all_reduce", "float32"),
        ("all_gather", "bfloat16"),
        ("reduce_scatter", "bfloat16"),
        ("all_to_all", "float32"),
    ],
)
def test_low_precision_reports_its_error_within_the_fp8_bound(tmp_path, collective, dtype):
    args = ["--collective", collective, "-d", dtype, "--low-precision", "-b", "4K", "-e", "16K"]
    rows, out, doc = perf_json(tmp_path, *args, *QUICK)
    bound = check.lp_bound(Config(collective=collective, datatype=dtype), 2)
    assert len(rows) == 2 and "#wrong" not in rows[0], out
    for r in rows:
        assert r["algo"] == "lp"
        # FP8 rounding shows (the LP path ran), within the documented bound
        assert 1e-3 < float(r["maxerr"]) <= bound, out
    assert f"bound {bound:.4g}) OK" in out and doc["low_precision"] is True
    assert all(0 < r["max_error"] <= doc["totals"]["lp_bound"] for r in doc["rows"])
