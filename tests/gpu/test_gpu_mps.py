"""Ranks sharing one GPU under MPS with no SM limit: every kernel that waits on a peer must find
the peer's kernel resident beside it. Before launches were fitted to the ranks sharing the GPU
(co_residency.hpp), one rank's grid (or a chain of early-launched kernels) could take every SM
and both waited until the in-kernel timeout.

Runs where an MPS control daemon serves this environment (``nox -s gpu`` starts one); with 2 and
3 ranks, every all_reduce algorithm from 1 KiB to 64 MiB eager and in CUDA graphs (through
rcclx-perf, which also checks every element), and every other collective eager and captured;
a late rank's own kernels that need shared memory, with no SM limit and with the SMs split.
A deadlock would end in the in-kernel timeout (RCCLX_TIMEOUT_MS, 10 s here) and fail the run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

from gpu_cases import current_stream, rank_device  # noqa: E402

from launcher import launch  # noqa: E402
from rcclx_core.perf import mps  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not mps.active(), reason="no MPS daemon serves this environment"),
]

TIMEOUT_MS = "10000"
# Whole runs that would each take the 10 s timeout many times over if anything waited for a
# peer that could not get an SM.
RUN_LIMIT_S = 120


def _no_sm_limit_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"}
    env["RCCLX_TIMEOUT_MS"] = TIMEOUT_MS
    return env


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("mode", [[], ["--graph", "4"]], ids=["eager", "graph"])
def test_every_allreduce_algorithm_finishes_under_mps_without_an_sm_limit(nranks, mode):
    cmd = [sys.executable, "-m", "rcclx_core.perf", "--device", "cuda", "-g", str(nranks)]
    cmd += ["-b", "1K", "-e", "64M", "-f", "8", "--algo", "all", "-n", "3", "-w", "1", *mode]
    start = time.monotonic()
    run = subprocess.run(cmd, env=_no_sm_limit_env(), capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stdout}\n{run.stderr}"
    assert f"ranks share GPUs: {nranks} ranks share a GPU" in run.stdout, run.stdout
    assert "MPS on" in run.stdout and "no SM limit" in run.stdout, run.stdout
    assert took < RUN_LIMIT_S, f"{took:.0f} s:\n{run.stdout}"


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("mode", [[], ["--graph", "20"]], ids=["eager", "graph"])
def test_back_to_back_early_launched_allreduces_finish_under_mps_without_an_sm_limit(nranks, mode):
    # The sizes whose kernels launch early one kernel ahead (co_residency.hpp), 300 calls each
    # back to back: a stream whose early-launched kernels chained without bound could hold every
    # SM while a peer's kernel of the same call waited for one (the hang this replaces).
    cmd = [sys.executable, "-m", "rcclx_core.perf", "--device", "cuda", "-g", str(nranks)]
    cmd += ["-b", "1K", "-e", "256K", "-f", "4", "--algo", "all"]
    cmd += ["-n", "300", "-w", "20", *mode]
    start = time.monotonic()
    run = subprocess.run(cmd, env=_no_sm_limit_env(), capture_output=True, text=True, timeout=300)
    took = time.monotonic() - start
    assert run.returncode == 0, f"{' '.join(cmd)}\n{run.stdout}\n{run.stderr}"
    assert "early launch one kernel ahead where two grids fit" in run.stdout, run.stdout
    assert took < RUN_LIMIT_S, f"{took:.0f} s:\n{run.stdout}"


def _every_collective_rank(ctx, graph: bool):
    """Each collective at 1 KiB and 16 MiB per rank, eager or captured in one CUDA graph
    replayed twice; returns the mismatches."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    n, me = ctx.nranks, ctx.rank
    bad = []
    for count in (256, 4 << 20):
        x = torch.full((count,), float(me + 1), device=dev)
        outs = {
            "all_reduce": torch.empty(count, device=dev),
            "all_gather": torch.empty(count * n, device=dev),
            "reduce_scatter": torch.empty(count // 4, device=dev),
            "reduce": torch.empty(count, device=dev),
            "all_to_all": torch.empty(count, device=dev),
            "broadcast": torch.empty(count, device=dev),
            "recv": torch.empty(count, device=dev),
        }
        scatter_in = torch.cat([x[: count // 4]] * n)

        def calls(x=x, outs=outs, scatter_in=scatter_in, count=count):
            s = current_stream()
            comm.all_reduce(x, outs["all_reduce"], stream=s)
            comm.all_gather(x, outs["all_gather"], stream=s)
            comm.reduce_scatter(scatter_in, outs["reduce_scatter"], stream=s)
            comm.all_to_all(x[: count // n * n], outs["all_to_all"][: count // n * n], stream=s)
            comm.broadcast(x, outs["broadcast"], root=n - 1, stream=s)
            comm.reduce(x, outs["reduce"], root=0, stream=s)
            comm.group_start()
            comm.send(x, (me + 1) % n, stream=s)
            comm.recv(outs["recv"], (me - 1) % n, stream=s)
            comm.group_end()
            comm.barrier(stream=s)

        if graph:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                calls()  # once eagerly: staging is made outside the capture
            torch.cuda.current_stream().wait_stream(side)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                calls()
            for _ in range(2):
                g.replay()
        else:
            calls()
        torch.cuda.synchronize()
        total = n * (n + 1) / 2
        expect = {
            "all_reduce": total,
            "reduce_scatter": total,
            "broadcast": float(n),
            "recv": float((me - 1) % n + 1),
            **({"reduce": total} if me == 0 else {}),
        }
        for name, value in expect.items():
            if not bool((outs[name] == value).all()):
                bad.append(f"{name} of {count}: {outs[name][:4].tolist()} != {value}")
        every_rank = [float(r + 1) for r in range(n)]
        firsts = {
            "all_gather": outs["all_gather"].view(n, count)[:, 0].tolist(),
            "all_to_all": outs["all_to_all"][: count // n * n].view(n, -1)[:, 0].tolist(),
        }
        for name, got in firsts.items():
            if got != every_rank:
                bad.append(f"{name} of {count}: blocks start {got}, not {every_rank}")
    comm.destroy()
    return bad


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_every_collective_finishes_under_mps_without_an_sm_limit(nranks, graph):
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    start = time.monotonic()
    results = launch(_every_collective_rank, nranks, graph, env=env, timeout=RUN_LIMIT_S)
    assert all(not r.value for r in results), [r.value for r in results]
    assert time.monotonic() - start < RUN_LIMIT_S


def _late_rank_with_shared_memory_kernels(ctx):
    """The peers enter each collective at once; the last rank first sleeps, then runs kernels
    that need shared memory (softmax over long rows caches a row in it, a column sum reduces
    through it). The peers' waiting blocks cover every SM meanwhile; the late rank's kernels
    must still start (ctran/kernel_launch.cuh). On an H100 it also passed before launches kept
    shared memory free (the 16 MiB grids leave room there): a regression test of a late rank,
    while tools/gpu/mps_shared_memory_probe.sh shows the starvation itself. Returns the
    mismatches."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    n, me = ctx.nranks, ctx.rank
    s = current_stream()
    # About 16 MiB of float32 in whole blocks per rank: the grids take every block the GPU's
    # share allows.
    count = (4 << 20) // n * n
    x = torch.full((count,), float(me + 1), device=dev)
    rows = torch.randn(512, 8192, device=dev)
    bad = []

    def late_kernels():
        if me == n - 1:
            torch.cuda.synchronize()
            time.sleep(0.3)
            torch.softmax(rows, dim=-1).sum(dim=0)

    late_kernels()
    out = torch.empty(count, device=dev)
    comm.all_to_all(x, out, stream=s)
    torch.cuda.synchronize()
    if out.view(n, -1)[:, 0].tolist() != [float(r + 1) for r in range(n)]:
        bad.append(f"all_to_all: blocks start {out.view(n, -1)[:, 0].tolist()}")

    late_kernels()
    scattered = torch.empty(count // n, device=dev)
    comm.reduce_scatter(x[: count // n * n], scattered, stream=s)
    torch.cuda.synchronize()
    if not bool((scattered == n * (n + 1) / 2).all()):
        bad.append(f"reduce_scatter: {scattered[:4].tolist()}")

    late_kernels()
    rows_each = count // n
    splits = torch.full((n,), rows_each, dtype=torch.int64, device=dev)
    got = torch.empty(n, dtype=torch.int64, device=dev)
    received = torch.empty(rows_each * n, device=dev)
    comm.alltoallv_dynamic(x[: rows_each * n], received, splits, got, stream=s)
    torch.cuda.synchronize()
    if got.tolist() != [rows_each] * n or received.view(n, -1)[:, 0].tolist() != [
        float(r + 1) for r in range(n)
    ]:
        bad.append(f"alltoallv_dynamic: counts {got.tolist()}")
    comm.destroy()
    return bad


@pytest.mark.parametrize("nranks", [2, 3])
@pytest.mark.parametrize("sms", ["no_limit", "split"])
def test_a_late_rank_runs_its_own_kernels_while_peers_wait(nranks, sms):
    # "split": each rank at 100 / nranks % of the SMs, where launches leave the SMs' shared
    # memory split as it is (the peers' blocks stay on their share of the SMs).
    env = _no_sm_limit_env()
    if sms == "split":
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(100 // nranks)
    start = time.monotonic()
    results = launch(_late_rank_with_shared_memory_kernels, nranks, env=env, timeout=RUN_LIMIT_S)
    assert all(not r.value for r in results), [r.value for r in results]
    assert time.monotonic() - start < RUN_LIMIT_S
