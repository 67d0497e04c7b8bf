"""rcclx-perf end to end on CPU ranks (the command as a subprocess, real rank processes, tiny
sizes): all_reduce's algorithms, the original collectives, the JSON, --compare gloo, and the
command line's refusals (exit 2, naming the option and the value)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest
from perf_runs import on_cpu, parse_table, perf, perf_json

import ctran
from rcclx_core._testing import free_port_run
from rcclx_core.perf import cli
from rcclx_core.perf.spec import Config

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")


def test_all_reduce_every_algorithm_checked_and_written_as_json(tmp_path):
    args = ["-b", "64", "-e", "4K", "-n", "5", "-w", "1", "-g", "2", "--algo", "all"]
    rows, out, doc = perf_json(tmp_path, *args)
    sizes, per_size = [64, 256, 1024, 4096], len(rows) // 4
    assert [int(r["size(B)"]) for r in rows] == [s for s in sizes for _ in range(per_size)], out
    algos = [r["algo"] for r in rows[:per_size]]
    assert {"ring", "dda_flat", "dda_tree"} <= set(algos), out
    assert algos[-1] == "auto(dda_flat)"  # 64 bytes: the selector's flat range
    assert all(r["#wrong"] == "0" and float(r["time(us)"]) > 0 for r in rows), out
    assert all(int(r["count(elems)"]) * 4 == int(r["size(B)"]) for r in rows)
    assert "# Out of bounds values : 0 OK" in out
    assert "# device: cpu (" in out and "mode: eager" in out and "layout: out of place" in out

    timed = [r for r in doc["rows"] if "skipped" not in r]  # e.g. GPU-only algorithms
    assert doc["nranks"] == 2 and len(timed) == len(rows)
    assert doc["device"] == "cpu" and doc["mode"] == "eager" and doc["inplace"] is False
    assert doc["low_precision"] is False and doc["compare"] == [] and doc["tuning"] is None
    assert doc["totals"]["wrong"] == 0
    for r in timed:
        assert r["wrong"] == 0 and len(r["rank_times"]) == 2
        assert r["time"] == r["mean"] == max(r["rank_times"]) >= r["min"] > 0
        assert r["algbw"] == pytest.approx(r["size"] / r["time"] / 1e3)
        assert r["busbw"] == pytest.approx(r["algbw"] * 2 * (2 - 1) / 2)
    # the summary: one entry per size, our fastest explicit algorithm
    assert [s["size"] for s in doc["summary"]] == sizes
    for s in doc["summary"]:
        group = [r for r in timed if r["size"] == s["size"] and r["algo"] != "auto"]
        assert s["time"] == min(r["time"] for r in group)
    assert "# Summary per size" in out


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
    assert len(rows) == 4 and all(r["#wrong"] == "0" and r["type"] == dtype for r in rows), out
    # the size column is the larger per-rank buffer: nranks blocks of count where there are blocks
    blocks = 3 if collective in ("all_gather", "reduce_scatter", "all_to_all") else 1
    itemsize = np.dtype(Config(datatype=dtype).dtype.storage).itemsize
    assert all(int(r["size(B)"]) == int(r["count(elems)"]) * blocks * itemsize for r in rows)


@needs_torch
def test_compare_gloo_adds_time_and_ratio(tmp_path):
    args = ["-b", "1K", "-e", "16K", "-n", "3", "-w", "1", "--compare", "gloo", "--median"]
    rows, out, doc = perf_json(tmp_path, *args)
    assert len(rows) == 3 and all(r["#wrong"] == "0" for r in rows), out
    for r in rows:  # ours / gloo, rounded as printed
        want = float(r["time(us)"]) / float(r["gloo(us)"])
        assert float(r["ours/gloo"]) == pytest.approx(want, rel=0.02, abs=2e-3)
    assert "# gloo wrong values: 0" in out and "compare: gloo (torch.distributed Gloo)" in out
    assert doc["compare"] == ["gloo"]
    for r in doc["rows"]:
        g = r["peers"]["gloo"]
        assert r["time"] == r["median"] and g["wrong"] == 0 and g["time"] == g["median"]
        assert g["ratio"] == pytest.approx(r["time"] / g["time"])
    best = doc["summary"][0]
    assert best["best_peer"] == "gloo" and best["ratio"] == pytest.approx(
        best["time"] / doc["rows"][0]["peers"]["gloo"]["time"]
    )


@needs_torch
def test_peers_that_cannot_run_print_a_dash_and_their_reason_once(tmp_path):
    args = ["-b", "1K", "-e", "4K", "-n", "2", "-w", "0", "--compare", "nccl,symm_mem,gloo"]
    rows, out = perf(tmp_path, *args)
    assert len(rows) == 2, out
    for r in rows:
        assert r["nccl(us)"] == r["ours/nccl"] == r["symm1(us)"] == r["symm2(us)"] == "-"
        assert float(r["gloo(us)"]) > 0
    assert out.count("# nccl printed -: NCCL runs on GPU buffers (this run is on cpu") == 1
    assert out.count("# symm1 printed -: torch symmetric memory runs on GPU buffers") == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (["--collective", "all_gather", "--algo", "ring"], "--algo applies to all_reduce only"),
        (["-b", "1x"], "not a byte size"),
        (["--graph", "5"], "--graph 5 needs --device cuda (CUDA graphs), but this run is on cpu"),
        (["--low-precision", "-d", "int32"], "--low-precision with -d int32: only float32"),
        (["--low-precision", "--collective", "gather"], "--low-precision does not apply to gather"),
        (["--low-precision", "--redop", "max"], "--low-precision with --redop max"),
        (["--check-determinism", "-d", "int32"], "--check-determinism with -d int32: only"),
        (["--check-determinism", "--redop", "max"], "--check-determinism with --redop max"),
        (["--check-determinism", "--collective", "all_gather"], "checks reductions, not"),
        (["--check-determinism", "-c", "0"], "--check-determinism with -c 0"),
        (["--compare", "nccl,foo"], "--compare: 'nccl,foo': unknown peer 'foo'"),
        (["--inplace", "--collective", "send_recv"], "--inplace does not apply to send_recv"),
        (["--inplace", "--collective", "all_to_all_v"], "--inplace does not apply to all_to_all_v"),
        (["--tuning", "pdl=0"], "--tuning 'pdl=0' needs --device cuda"),
        (["--symmetric"], "--symmetric needs --device cuda"),
        (["--mps"], "--mps needs --device cuda, but this run is on cpu"),
        (["--passes", "0"], "--passes 0 must be at least 1"),
        (["--graph", "0"], "--graph 0 must be at least 1"),
        (["--strict-targets"], "--strict-targets needs --targets FILE"),
        (["--targets", "no_such_targets"], "--targets 'no_such_targets': no such file"),
        (["--redop", "max", "--collective", "gather"], "--redop max does not apply to gather"),
        (["--repeat", "0"], "--repeat 0 must be at least 1"),
        (["--repeat", "3", "--targets", "cpu"], "--repeat 3 does not take --targets cpu"),
        (["--repeat", "2", "--plot", "x.png"], "--repeat 2 does not take --plot x.png"),
    ],
)
def test_bad_command_lines_exit_2_naming_the_option(capsys, args, message):
    # in process (what the command runs first, before any rank starts): fast
    with pytest.raises(SystemExit) as e:
        cli.config_from_args(on_cpu(args))
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_a_bad_command_line_exits_2_from_the_command(tmp_path):
    _, out = perf(tmp_path, "--low-precision", "-d", "int32", expect=2)
    assert "rcclx-perf: error: --low-precision with -d int32: only float32, bfloat16" in out


@pytest.mark.skipif(ctran.cuda_device_count()[0] > 0, reason="this machine has a GPU")
def test_device_cuda_without_a_gpu_is_a_clear_error(tmp_path):
    _, out = perf(tmp_path, "--device", "cuda", expect=2)
    why = ctran.cuda_device_count()[1]
    assert f"rcclx-perf: error: --device cuda: {why}" in out
    rows, out = perf(tmp_path, "--device", "auto", "-b", "64", "-e", "64", "-n", "1", "-w", "0")
    assert len(rows) == 1 and f"# device: cpu (auto: {why})" in out


@needs_torch
@pytest.mark.parametrize("rendezvous", ["standalone", "master_port_with_the_next_one_taken"])
def test_torchrun_runs_each_process_as_one_rank(tmp_path, rendezvous):
    import socket

    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    taken = socket.socket()
    if rendezvous == "standalone":
        cmd.append("--standalone")
    else:
        # The bootstrap store does not need the port after torchrun's (a closed connection's
        # TIME_WAIT may hold it): rank 0 announces the one it got through torchrun's store.
        port = free_port_run(2)
        cmd += ["--nnodes", "1", "--master-addr", "127.0.0.1", "--master-port", str(port)]
        taken.bind(("127.0.0.1", port + 1))
        taken.listen()
    args = ["-m", "rcclx_core.perf", *on_cpu(["--collective", "scatter", "-b", "1K", "-e", "4K"])]
    with taken:
        proc = subprocess.run(
            [*cmd, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = parse_table(proc.stdout)
    assert len(rows) == 2 and all(r["#wrong"] == "0" for r in rows), proc.stdout
    assert "2 ranks (torchrun)" in proc.stdout


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_plot_draws_busbw_against_size(tmp_path):
    _, out = perf(tmp_path, "-b", "64", "-e", "1K", "-n", "2", "--algo", "all", "--plot", "p.png")
    assert "# wrote p.png" in out
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_repeat_runs_the_sweep_in_fresh_processes_and_reports_the_spread(tmp_path):
    args = ["-b", "1K", "-e", "4K", "-n", "3", "-w", "1", "--median", "--algo", "all"]
    _, out, doc = perf_json(tmp_path, *args, "--repeat", "3", "--compare", "gloo")
    assert out.count("exit 0") == 3 and "Stability over 3 runs, each in fresh processes" in out
    assert doc["repeat"] == 3 and len(doc["runs"]) == 3
    columns = {(r["size"], r["column"]) for r in doc["stability"]}
    assert {(1024, "ring"), (1024, "dda_flat"), (4096, "peer:gloo")} <= columns
    for r in doc["stability"]:
        assert len(r["runs"]) == 3
        assert r["min"] <= r["median"] <= r["max"]
        assert r["spread"] == pytest.approx(r["max"] / r["min"])
    assert [s["size"] for s in doc["per_size"]] == [1024, 4096]
    for s in doc["per_size"]:
        assert s["best_peer"] == "gloo" and s["ratio"] == pytest.approx(s["time"] / s["peer_time"])
        assert s["best"] != "auto" and not s["best"].startswith("auto(")
    # every run's timed rows carry each rank's scheduling record of the column (sched.py),
    # which the table shows
    for run in doc["runs"]:
        for row in run["rows"]:
            if "time" not in row:
                continue
            assert len(row["sched"]) == 2, row
            for record in row["sched"]:
                assert record["voluntary"] >= 0 and record["involuntary"] >= 0, record
                assert record.get("migrations", 0) >= 0, record  # where the kernel counts them
                assert record["cpu"] in os.sched_getaffinity(0), record
                assert record["steal_ms"] >= 0, record  # /proc/stat has a steal field
            if len(os.sched_getaffinity(0)) < 2:
                continue  # no second CPU to probe
            # rank 0's cross-core probe right after the size
            assert row["link"]["cpus"] == sorted(os.sched_getaffinity(0))[:2], row
            assert row["link"]["round_trip_ns"] > 0 and row["link"]["handoff_64k_us"] > 0
    assert "Scheduling in each size's fastest and slowest run" in out
    table = out.split("Scheduling in each size's fastest and slowest run")[1]
    rows = [ln.split() for ln in table.splitlines() if ln.strip()[:1].isdigit()]
    assert {r[1] for r in rows} == {"fastest", "slowest"} and {r[0] for r in rows} == {
        "1024",
        "4096",
    }
    if len(os.sched_getaffinity(0)) >= 2:
        assert all(r[6] == "ns" and r[8] == "us" for r in rows), table  # the link cell


def _run_doc(times: dict) -> dict:
    """A run's JSON as rcclx-perf writes it, reduced to what --repeat reads: {(size, algo):
    time}, with a gloo time of 100 per size."""
    rows = []
    for (size, algo), t in times.items():
        row = {"size": size, "algo": algo, "time": t, "peers": {"gloo": {"time": 100.0}}}
        if algo == "auto":
            row["selected"] = "ring" if t > 5 else "dda_flat"
        rows.append(row)
    return {"rows": rows}


def test_repeat_tables_from_given_runs():
    from rcclx_core.perf import repeat

    runs = [
        _run_doc({(64, "ring"): 4.0, (64, "auto"): 3.0}),
        _run_doc({(64, "ring"): 12.0, (64, "auto"): 9.0}),
        _run_doc({(64, "ring"): 5.0, (64, "auto"): 4.0}),
    ]
    rows = repeat.stability(runs)
    ring = next(r for r in rows if r["column"] == "ring")
    assert ring["runs"] == [4.0, 12.0, 5.0] and ring["median"] == 5.0 and ring["spread"] == 3.0
    auto = next(r for r in rows if r["column"] == "auto")
    assert auto["label"] == "auto(dda_flat|ring)"  # the selector chose differently across runs
    assert [r["column"] for r in rows] == ["ring", "auto", "peer:gloo"]  # ours, then the peers
    (size,) = repeat.per_size(rows)
    assert size["best"] == "ring" and size["time"] == 5.0  # auto counts only when alone
    assert size["ratio"] == pytest.approx(0.05) and size["peer_spread"] == 1.0


def test_repeat_names_the_fastest_and_slowest_run_with_their_scheduling():
    from rcclx_core.perf import repeat

    runs = [
        _run_doc({(64, "ring"): 4.0}),
        _run_doc({(64, "ring"): 12.0}),
        _run_doc({(64, "ring"): 5.0}),
    ]
    for k, run in enumerate(runs):
        run["rows"][0]["sched"] = [{"voluntary": k, "involuntary": 10 * k, "cpu": k % 2}]
        run["rows"][0]["link"] = {"cpus": [0, 1], "round_trip_ns": 100.0 * (k + 1)}
    fastest, slowest = repeat.scheduling(runs, repeat.stability(runs))
    assert (fastest["which"], fastest["run"], fastest["time"]) == ("fastest", 1, 4.0)
    assert (slowest["which"], slowest["run"], slowest["time"]) == ("slowest", 2, 12.0)
    assert slowest["ranks"] == [{"voluntary": 1, "involuntary": 10, "cpu": 1}]
    assert fastest["link"]["round_trip_ns"] == 100.0 and slowest["link"]["round_trip_ns"] == 200.0


@pytest.mark.parametrize("collective", ["all_reduce", "reduce_scatter", "reduce"])
def test_check_determinism_holds_ours_to_the_fold_order(tmp_path, collective):
    """Inputs over eight decades, 3 ranks (the ring's order differs from rank order from 3):
    every algorithm of ours has every element's bits; the classic ring beside it does not."""
    args = ["-g", "3", "-b", "64K", "-e", "1M", "-f", "16", "-n", "1", "-w", "0"]
    args += ["--collective", collective, "--check-determinism", "--compare", "unordered"]
    if collective == "all_reduce":
        args += ["--algo", "all"]
    rows, out = perf(tmp_path, *args)
    assert "check: every element's bits against the fold order" in out, out
    assert rows and all(r["#wrong"] == "0" for r in rows), out
    if collective != "reduce":  # the chain reduce ends at the root: its order can match
        wrong = int(out.split("# unordered wrong values: ")[1].split()[0])
        assert wrong > 0, out
