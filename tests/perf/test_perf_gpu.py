"""rcclx-perf end to end on GPUs (marked gpu: skipped without one). Two ranks share one GPU
where the machine has one (rank r on GPU r % GPUs): the check holds, times mean nothing, and
NCCL and symmetric memory, which need one GPU per rank, print "-"; they run with one rank."""

from __future__ import annotations

import pytest
from perf_runs import perf, perf_json

from rcclx_core.perf import check
from rcclx_core.perf.spec import Config

pytestmark = pytest.mark.gpu
CUDA = ("--device", "cuda")


def test_every_algorithm_on_two_ranks_sharing_a_gpu_is_right(tmp_path):
    args = [*CUDA, "-g", "2", "--algo", "all", "-c", "1", "-b", "1K", "-e", "1M", "-n", "5"]
    rows, out, doc = perf_json(tmp_path, *args, "-w", "1")
    assert rows and all(r["#wrong"] == "0" for r in rows), out
    assert {r["algo"] for r in rows} >= {"dda_flat", "dda_tree", "dda_large"}, out
    assert "# skipped ring:" in out  # host buffers only
    assert doc["device"] == "cuda" and doc["mode"] == "eager" and "host(us)" in out
    assert all(r["host"]["mean"] > 0 for r in doc["rows"] if "time" in r)


def test_graph_mode_times_replays_and_checks_a_replay(tmp_path):
    args = [*CUDA, "-g", "2", "--graph", "5", "--algo", "all", "-b", "1K", "-e", "4M", "-f", "16"]
    rows, out, doc = perf_json(tmp_path, *args, "-n", "3", "-w", "1", "--median")
    assert rows and all(r["#wrong"] == "0" for r in rows), out
    assert "mode: graph: 5 ops captured in one CUDA graph" in out and doc["mode"] == "graph of 5"
    assert "host(us)" not in out


@pytest.mark.parametrize(
    "collective, extra",
    [
        # The collectives new to the tool, and one captured; the others' GPU kernels are
        # checked by tests/gpu, their buffer layouts by the CPU tests of tests/perf.
        ("all_to_all_v", []),
        ("send_recv", []),
        ("gather", ["--inplace"]),
        ("scatter", []),
        ("reduce_scatter", ["--redop", "max", "--graph", "3"]),
    ],
)
def test_every_collective_on_two_ranks_is_right(tmp_path, collective, extra):
    args = [*CUDA, "-g", "2", "--collective", collective, "-b", "4K", "-e", "1M", "-f", "16"]
    rows, out = perf(tmp_path, *args, "-n", "3", "-w", "1", *extra)
    assert len(rows) == 3 and all(r["#wrong"] == "0" for r in rows), out


@pytest.mark.parametrize("collective", ["all_reduce", "all_to_all"])
def test_low_precision_on_gpu_within_the_fp8_bound(tmp_path, collective):
    args = [*CUDA, "-g", "2", "--collective", collective, "--low-precision", "-b", "1M", "-e", "4M"]
    rows, out = perf(tmp_path, *args, "-n", "3", "-w", "1", "--graph", "2")
    bound = check.lp_bound(Config(collective=collective), 2)
    assert len(rows) == 2 and all(1e-3 < float(r["maxerr"]) <= bound for r in rows), out


def test_compare_nccl_and_symmetric_memory_on_one_rank(tmp_path):
    args = [*CUDA, "-g", "1", "--compare", "nccl,symm_mem", "-b", "1K", "-e", "1M", "-f", "32"]
    rows, out, doc = perf_json(tmp_path, *args, "-n", "5", "-w", "2", "--graph", "4")
    assert len(rows) == 3, out
    for r in rows:
        assert r["#wrong"] == "0" and float(r["nccl(us)"]) > 0 and float(r["ours/nccl"]) > 0, out
        assert float(r["symm1(us)"]) > 0 and float(r["symm2(us)"]) > 0, out
    for p in ("nccl", "symm1", "symm2"):
        assert f"# {p} wrong values: 0" in out
    assert all("ratio" in s for s in doc["summary"])


def test_peers_print_a_dash_when_ranks_share_a_gpu_or_the_peer_is_for_the_host(tmp_path):
    args = [*CUDA, "-g", "2", "--compare", "nccl,symm_mem,gloo", "-b", "1K", "-e", "4K"]
    rows, out = perf(tmp_path, *args, "-n", "2", "-w", "0")
    import ctran

    if ctran.cuda_device_count()[0] < 2:
        assert "# nccl printed -: ranks share a GPU" in out
        assert all(r["nccl(us)"] == "-" for r in rows), out
    assert "# gloo printed -: gloo runs on host buffers" in out
    assert all(r["gloo(us)"] == "-" and r["#wrong"] == "0" for r in rows), out


def test_symmetric_buffers_and_tuning(tmp_path):
    args = [
        *CUDA,
        "-g",
        "2",
        "--symmetric",
        "--algo",
        "dda_tree",
        "-b",
        "4M",
        "-e",
        "8M",
        "-f",
        "2",
    ]
    rows, out = perf(tmp_path, *args, "-f", "2", "-n", "3", "-w", "1", "--tuning", "pdl=0")
    assert len(rows) == 2 and all(r["#wrong"] == "0" for r in rows), out
    assert "comm.alloc_symmetric" in out and "tuning: _testing.set_gpu_tuning(comm, 'pdl=0')" in out
    _, out = perf(tmp_path, *CUDA, "-g", "1", "--tuning", "no_such_knob=1", "-n", "1", expect=2)
    assert "--tuning 'no_such_knob=1'" in out
