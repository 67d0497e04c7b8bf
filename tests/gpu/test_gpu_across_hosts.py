"""GPU buffers on a communicator whose ranks span hosts (two pretend hosts, RCCLX_HOST_ID per
rank, tcp between them; the ranks may share one GPU): every call runs the host back-end's
collective on copies in pinned host memory (staged_backend.hpp), queued behind the stream by the
host proxy (host_proxy.hpp): the caller does not wait.

The collective families of test_gpu_collectives run unchanged (bitwise against the same
references as on one host); all_reduce by type and operator, in place, low precision (the same
bits as the same call on host copies), a stream whose earlier work the call must wait for, and
alltoallv_dynamic (rows past the received ones untouched); calls that return before a late peer
arrived, calls past the staging budget on two streams; large calls in pieces (a pipeline,
RCCLX_STAGED_CHUNK_BYTES made small); calls captured into CUDA graphs and replayed on new
inputs, eager calls between the replays; 2+1 and 2x2 pretend hosts; a peer that dies while the
stream waits, eagerly and in a replay; what staging refuses (symmetric buffers) with an error
that says why; rcclx-overlap (compute beside calls across hosts) end to end.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
import test_gpu_collectives as collectives  # noqa: E402
from gpu_cases import (  # noqa: E402
    Cases,
    current_stream,
    error_problem,
    rank_device,
)

import rcclx_core as rc  # noqa: E402
from launcher import launch, pretend_hosts  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
FAMILIES = (
    "data_movement",
    "reduce_scatter",
    "reduce",
    "v_variants",
    "in_place_and_misaligned",
    "point_to_point",
    "multi_round",
)


# Pretend host of each rank: one rank a host, then 2+1 and 2x2 (shared memory inside a host).
LAYOUTS = {"1+1": (0, 1), "2+1": (0, 0, 1), "2x2": (0, 0, 1, 1)}


def _spans_hosts(ctx, hosts=NRANKS):
    comm = ctx.communicator()
    found = comm.num_hosts
    assert found == hosts, f"expected {hosts} hosts, the communicator found {found}"
    return comm


def _family_rank(ctx, family, hosts):
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx, hosts)
    c = collectives.CollectiveCases(ctx, comm, dev)
    collectives.FAMILIES[family][0](c)
    comm.destroy()
    return c.results


@pytest.mark.parametrize("family", FAMILIES)
def test_collective_family_across_hosts(family):
    results = launch(_family_rank, NRANKS, family, NRANKS, timeout=240, rank_env=pretend_hosts())
    checks.assert_cases(
        results, expect_cases=collectives.FAMILIES[family][1], same_on_all_ranks=True
    )


@pytest.mark.parametrize("layout", ["2+1", "2x2"])
@pytest.mark.parametrize("family", ["data_movement", "point_to_point"])
def test_collective_family_across_uneven_and_shared_hosts(family, layout):
    """The families without reductions: over more than two ranks the host's reductions fold
    each host's ranks first (hierarchical), so their float bits differ from the one-host
    kernels' reference; the graph test below checks reductions there on whole numbers."""
    hosts = LAYOUTS[layout]
    results = launch(
        _family_rank, len(hosts), family, max(hosts) + 1, timeout=240,
        rank_env=pretend_hosts(hosts),
    )  # fmt: skip
    # data_movement broadcasts from every root: one case more per rank
    expect = collectives.FAMILIES[family][1]
    if family == "data_movement":
        expect = len(collectives.COPY_TYPES) * len(collectives.COUNTS) * (4 + len(hosts))
    checks.assert_cases(results, expect_cases=expect, same_on_all_ranks=True)


@pytest.mark.parametrize(
    "family, layout",
    [
        ("data_movement", "1+1"),
        ("reduce_scatter", "1+1"),
        ("v_variants", "1+1"),
        ("in_place_and_misaligned", "1+1"),
        ("data_movement", "2x2"),
    ],
)
def test_collective_family_in_pieces_across_hosts(family, layout):
    """RCCLX_STAGED_CHUNK_BYTES=64K: every all_gather and reduce_scatter (plain, v, in place) of
    128 KiB or more runs as a pipeline of pieces, each rank's block sliced alike."""
    hosts = LAYOUTS[layout]
    results = launch(
        _family_rank, len(hosts), family, max(hosts) + 1, env={"RCCLX_STAGED_CHUNK_BYTES": "64K"},
        timeout=240, rank_env=pretend_hosts(hosts),
    )  # fmt: skip
    expect = collectives.FAMILIES[family][1]
    if family == "data_movement":
        expect = len(collectives.COPY_TYPES) * len(collectives.COUNTS) * (4 + len(hosts))
    checks.assert_cases(results, expect_cases=expect, same_on_all_ranks=True)


# --- all_reduce ------------------------------------------------------------------------------

ALL_REDUCE_TYPE_OPS = [
    ("bfloat16", ("SUM", "MAX", "AVG", "PREMUL_SUM")),
    ("float32", ("SUM", "PROD", "AVG", "PREMUL_SUM")),
    ("int32", ("SUM", "MIN", "BXOR")),
    ("float64", ("SUM",)),
]
ALL_REDUCE_COUNTS = (1, 1001, 1 << 20)


def _all_reduce_rank(ctx):
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    c = collectives.CollectiveCases(ctx, comm, dev)
    me, s = c.me, current_stream
    for name, ops in ALL_REDUCE_TYPE_OPS:
        for op in ops:
            rop = getattr(rc.RedOp, op)
            for count in ALL_REDUCE_COUNTS:
                xs = c.inputs(name, count, op)

                def ar(xs=xs, op=op, rop=rop):
                    out = c.empty(xs[0].dtype, xs[0].numel())
                    comm.all_reduce(xs[me], out, op=rop, stream=s(), **c.scalar(op))
                    return out, collectives.reduced(xs, op)

                c.run(f"all_reduce {name} {op} n={count}", ar, same_on_all_ranks=True)
    xs = c.inputs("float32", 70001)

    def in_place():
        buf = xs[me].clone()
        comm.all_reduce(buf, stream=s())
        return buf, collectives.reduced(xs, "SUM")

    c.run("all_reduce float32 in place", in_place, same_on_all_ranks=True)
    for name in ("float32", "bfloat16"):
        x = c.inputs(name, 3 << 18)[me]

        def low_precision(x=x):
            out = c.empty(x.dtype, x.numel())
            comm.all_reduce(x, out, stream=s(), low_precision=True)
            on_host = x.cpu()
            comm.all_reduce(on_host, low_precision=True)
            # the same host code on the same bits: any difference is the staging's
            return out, on_host.to(out.device)

        c.run(f"all_reduce {name} low precision equals the host's", low_precision)

    def waits_for_the_stream():
        # the input is written by the stream's last kernel, after a sleep: the call must copy
        # it only once the stream got there
        side = torch.cuda.Stream()
        x = torch.zeros(4096, device=dev)
        out = c.empty(torch.float32, 4096)
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(100_000_000)  # ~50 ms
            x.fill_(me + 1.0)
            comm.all_reduce(x, out, stream=side.cuda_stream)
        side.synchronize()
        return out, torch.full_like(out, sum(r + 1.0 for r in range(c.n)))

    c.run("all_reduce waits for the stream's earlier work", waits_for_the_stream)
    comm.destroy()
    return c.results


@pytest.mark.parametrize("chunk", ["default", "64K"])
def test_all_reduce_across_hosts(chunk):
    """With 64 KiB chunks every all_reduce of 128 KiB or more runs in pieces (up to 16); the low
    precision ones run whole."""
    env = {} if chunk == "default" else {"RCCLX_STAGED_CHUNK_BYTES": chunk}
    results = launch(_all_reduce_rank, NRANKS, env=env, timeout=240, rank_env=pretend_hosts())
    cases = sum(len(ops) for _, ops in ALL_REDUCE_TYPE_OPS) * len(ALL_REDUCE_COUNTS) + 1 + 2 + 1
    checks.assert_cases(results, expect_cases=cases, same_on_all_ranks=True)


# --- alltoallv_dynamic -----------------------------------------------------------------------


def _dynamic_rank(ctx):
    """Random split matrices; rows name sender, receiver and row; the output has slack rows
    that must keep their poison."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    n, me, row, slack = ctx.nranks, ctx.rank, 3, 5
    c = Cases()
    for seed in range(4):
        m = np.random.default_rng(seed).integers(0, 40, size=(n, n))

        def rows(src, dst, m=m):
            r = np.arange(int(m[src, dst]), dtype=np.int64)[:, None]
            e = np.arange(row, dtype=np.int64)[None, :]
            return (((src * 16 + dst) * 1000 + r) * 64 + e).reshape(-1)

        def call(m=m, rows=rows):
            send = torch.from_numpy(np.concatenate([rows(me, d) for d in range(n)])).to(dev)
            total = int(m[:, me].sum())
            out = torch.full(((total + slack) * row,), -7, dtype=torch.int64, device=dev)
            splits = torch.from_numpy(m[me, :].astype(np.int64)).to(dev)
            got = torch.full((n,), -5, dtype=torch.int64, device=dev)
            offsets = torch.full((n,), -5, dtype=torch.int64, device=dev)
            comm.alltoallv_dynamic(
                send,
                out,
                splits,
                got,
                output_offsets=offsets,
                row_elems=row,
                stream=current_stream(),
            )
            want_rows = np.concatenate([rows(s, me) for s in range(n)])
            want_out = np.concatenate([want_rows, np.full(slack * row, -7, dtype=np.int64)])
            want_counts = m[:, me].astype(np.int64)
            want_offsets = np.concatenate([[0], np.cumsum(want_counts)[:-1]])
            got_all = torch.cat([out, got, offsets])
            want_all = np.concatenate([want_out, want_counts, want_offsets]).astype(np.int64)
            return got_all, torch.from_numpy(want_all).to(dev)

        c.run(f"alltoallv_dynamic seed={seed}", call)
    comm.destroy()
    return c.results


def test_alltoallv_dynamic_across_hosts():
    results = launch(_dynamic_rank, NRANKS, timeout=120, rank_env=pretend_hosts())
    checks.assert_cases(results, expect_cases=4, same_on_all_ranks=True)


# --- the caller does not wait --------------------------------------------------------------

LATE_S = 1.5
SMALL_CALLS = 40  # fewer than HostProxy::kMaxCallsInFlight


def _behind_the_caller_rank(ctx):
    """The last rank comes LATE_S late. The others' calls (three of 4 MiB, then SMALL_CALLS of
    4 KiB) return at once; work enqueued after them on the stream sees their results."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    c = Cases()
    n, me = ctx.nranks, ctx.rank
    s = current_stream()
    xs = [torch.full((1 << 20,), float(me + 1 + k), device=dev) for k in range(3)]
    xs += [torch.full((1024,), float(me + 4 + k), device=dev) for k in range(SMALL_CALLS)]
    torch.cuda.synchronize()
    if me == n - 1:
        time.sleep(LATE_S)
    start = time.monotonic()
    for x in xs:
        comm.all_reduce(x, stream=s)
    issued = time.monotonic() - start
    xs[0].mul_(2)  # stream order: after the first call's copies back
    torch.cuda.synchronize()
    waited = time.monotonic() - start
    if me != n - 1:
        c.record(
            "calls return before the late peer arrives",
            None if issued < LATE_S / 3 and waited > LATE_S / 2 else
            f"issuing {len(xs)} calls took {issued:.3f} s, the stream finished after "
            f"{waited:.3f} s",
        )  # fmt: skip
    else:
        c.record("calls return before the late peer arrives", None)
    base = sum(r + 1.0 for r in range(n))
    want = [torch.full_like(x, base + n * k) for k, x in enumerate(xs)]
    want[0] *= 2
    c.record("results in stream order", checks.same_bits(torch.cat(xs), torch.cat(want)))
    comm.destroy()
    return c.results


def test_calls_run_behind_the_caller_in_stream_order():
    results = launch(_behind_the_caller_rank, NRANKS, timeout=120, rank_env=pretend_hosts())
    checks.assert_cases(results, expect_cases=2)


def _past_the_staging_budget_rank(ctx):
    """RCCLX_STAGED_BYTES_IN_FLIGHT of 256 KiB: calls of 64 KiB (128 KiB of staging each)
    alternate between two streams ordered by events; the caller waits for staging, and every
    result is right; then one call larger than the budget runs alone."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    c = Cases()
    n, me = ctx.nranks, ctx.rank
    s = current_stream()
    other = torch.cuda.Stream()
    ys = [torch.full((16384,), float(me * 10 + k), device=dev) for k in range(12)]
    torch.cuda.synchronize()
    for k, y in enumerate(ys):
        if k % 2 == 1:
            other.wait_stream(torch.cuda.current_stream())
            comm.all_reduce(y, stream=other.cuda_stream)
        else:
            torch.cuda.current_stream().wait_stream(other)
            comm.all_reduce(y, stream=s)
    torch.cuda.current_stream().wait_stream(other)
    torch.cuda.synchronize()
    problems = [
        checks.same_bits(y, torch.full_like(y, sum(r * 10.0 + k for r in range(n))))
        for k, y in enumerate(ys)
    ]
    c.record("calls past the budget, two streams", next((p for p in problems if p), None))
    big = torch.full((1 << 18,), float(me + 1), device=dev)  # 1 MiB: past the budget alone
    comm.all_reduce(big, stream=s)
    torch.cuda.synchronize()
    c.record("a call larger than the budget", checks.same_bits(big, torch.full_like(big, 3.0)))
    comm.destroy()
    return c.results


def test_calls_past_the_staging_budget_wait_for_staging():
    env = {"RCCLX_STAGED_BYTES_IN_FLIGHT": "256K"}
    results = launch(
        _past_the_staging_budget_rank, NRANKS, env=env, timeout=120, rank_env=pretend_hosts()
    )
    checks.assert_cases(results, expect_cases=2)


# --- graph capture ----------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", ["default", "256K"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_graph_of_every_collective_across_hosts_replays_on_changing_inputs(layout, chunk):
    """test_gpu_collectives' graph (all_gather, reduce_scatter, all_to_all, broadcast, reduce, a
    barrier, a group of send/recv; 1.2 MB blocks, so the copy engines stage them) across pretend
    hosts: every replay runs every host part again, on the replay's inputs; with 256 KiB chunks
    the all_gather and reduce_scatter run in pieces. Over more than two ranks the inputs are
    whole numbers (the host folds each host's ranks first)."""
    replays = 3
    hosts = LAYOUTS[layout]
    env = {} if chunk == "default" else {"RCCLX_STAGED_CHUNK_BYTES": chunk}
    results = launch(
        collectives._graph_rank, len(hosts), replays, len(hosts) > 2, env=env, timeout=240,
        rank_env=pretend_hosts(hosts),
    )  # fmt: skip
    checks.assert_cases(results, expect_cases=replays * len(collectives.GRAPH_CALLS))


def _captured_all_reduce_rank(ctx, replays):
    """all_reduce captured first thing (the capture makes the replays' channel): 1 KiB (the step
    kernel copies it) and 4 MiB (the copy engines) in one graph, replayed on new inputs with an
    eager call behind each replay on the same stream; then a second graph, the first destroyed,
    and eager calls still right."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    n, me = ctx.nranks, ctx.rank
    small = torch.empty(256, device=dev)
    large = torch.empty(1 << 20, device=dev)
    eager = torch.empty(4096, device=dev)
    ramp = torch.arange(large.numel(), dtype=torch.float32, device=dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        comm.all_reduce(small, stream=current_stream())
        comm.all_reduce(large, op=rc.RedOp.MAX, stream=current_stream())
    c = Cases()
    for rep in range(replays):
        small.fill_(rep + me + 1.0)
        large.copy_(ramp * (me + 1) + rep)
        eager.fill_(10.0 * (rep + 1) + me)
        g.replay()
        comm.all_reduce(eager, stream=current_stream())
        torch.cuda.synchronize()
        want_small = sum(rep + r + 1.0 for r in range(n))
        c.record(f"replay {rep} 1 KiB", checks.same_bits(small, torch.full_like(small, want_small)))
        c.record(f"replay {rep} 4 MiB", checks.same_bits(large, ramp * n + rep))
        want_eager = sum(10.0 * (rep + 1) + r for r in range(n))
        c.record(f"eager after {rep}", checks.same_bits(eager, torch.full_like(eager, want_eager)))
    del g
    h = torch.cuda.CUDAGraph()
    with torch.cuda.graph(h):
        comm.all_gather(small, eager[: n * small.numel()], stream=current_stream())
    small.fill_(me + 5.0)
    h.replay()
    torch.cuda.synchronize()
    want = torch.cat([torch.full_like(small, r + 5.0) for r in range(n)])
    c.record("second graph", checks.same_bits(eager[: n * small.numel()], want))
    del h
    x = torch.full((1 << 16,), me + 1.0, device=dev)
    comm.all_reduce(x, stream=current_stream())
    torch.cuda.synchronize()
    c.record("eager after the graphs", checks.same_bits(x, torch.full_like(x, n * (n + 1) / 2)))
    comm.destroy()
    return c.results


def test_captured_all_reduce_replays_with_eager_calls_between():
    replays = 3
    results = launch(
        _captured_all_reduce_rank, NRANKS, replays, timeout=120, rank_env=pretend_hosts()
    )
    checks.assert_cases(results, expect_cases=3 * replays + 2, same_on_all_ranks=True)


def _rank_1_dies_while(ctx, comm, x, enqueue) -> dict:
    """Rank 1 dies a second after rank 0 ran `enqueue` (its stream then waits on a host part that
    waits for rank 1; not at once: a call made after rank 0 already saw the death raises at the
    call, which is right too but not what these tests are about). The wait must end (no hang),
    and the next call must raise naming rank 1."""
    if ctx.rank == 1:
        time.sleep(1.0)
        os._exit(0)
    start = time.monotonic()
    enqueue()
    torch.cuda.synchronize()  # the wait kernel ends once the host part fails
    drained = time.monotonic() - start
    try:
        comm.all_reduce(x, stream=current_stream())
        torch.cuda.synchronize()
        raised = "no error raised"
    except rc.Error as e:
        raised = None if "rank 1" in str(e) else f"the error does not name rank 1: {e}"
    comm.abort()
    return {"drained_s": drained, "raised": raised}


def _dies_while_the_stream_waits_rank(ctx):
    """An eager all_reduce whose host part waits for a rank that dies."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    x = torch.ones(1 << 16, device=dev)
    comm.all_reduce(x, stream=current_stream())
    torch.cuda.synchronize()
    return _rank_1_dies_while(ctx, comm, x, lambda: comm.all_reduce(x, stream=current_stream()))


def test_a_peer_that_dies_while_the_stream_waits_is_an_error_not_a_hang():
    env = {"RCCLX_TIMEOUT_MS": "5000"}
    results = launch(
        _dies_while_the_stream_waits_rank,
        NRANKS,
        env=env,
        timeout=90,
        expect_errors=True,
        rank_env=pretend_hosts(),
    )
    survivor = results[0]
    assert survivor.error is None, survivor.error
    assert survivor.value["raised"] is None, survivor.value
    assert survivor.value["drained_s"] < 30, survivor.value


def _dies_while_a_replay_waits_rank(ctx):
    """An all_reduce captured and replayed once on both ranks; then a replay whose host part, on
    the graph channel, waits for a rank that dies."""
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    x = torch.ones(1 << 16, device=dev)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        comm.all_reduce(x, stream=current_stream())
    g.replay()
    torch.cuda.synchronize()
    first = float(x[0])
    return {"first": first, **_rank_1_dies_while(ctx, comm, x, g.replay)}


def test_a_peer_that_dies_while_a_replay_waits_is_an_error_not_a_hang():
    env = {"RCCLX_TIMEOUT_MS": "5000"}
    results = launch(
        _dies_while_a_replay_waits_rank, NRANKS, env=env, timeout=90, expect_errors=True,
        rank_env=pretend_hosts(),
    )  # fmt: skip
    survivor = results[0]
    assert survivor.error is None, survivor.error
    assert survivor.value["first"] == 2.0, survivor.value
    assert survivor.value["raised"] is None, survivor.value
    assert survivor.value["drained_s"] < 30, survivor.value


# --- what staging refuses ----------------------------------------------------------------------


def _refusals_rank(ctx):
    dev = rank_device(ctx)
    comm = _spans_hosts(ctx)
    c = Cases()
    c.record(
        "symmetric buffers are refused",
        error_problem(
            lambda: comm.alloc_symmetric(1 << 20),
            rc.InvalidUsageError,
            ("symmetric buffers need every rank on one host",),
        ),
    )
    # the communicator still works after both
    y = torch.full((1024,), float(ctx.rank + 1), device=dev)
    comm.all_reduce(y, stream=current_stream())
    torch.cuda.synchronize()
    c.record("usable afterwards", checks.same_bits(y, torch.full_like(y, 3.0)))
    comm.destroy()
    return c.results


def test_what_staging_refuses_is_a_clear_error():
    results = launch(_refusals_rank, NRANKS, timeout=120, rank_env=pretend_hosts())
    checks.assert_cases(results, expect_cases=2, same_on_all_ranks=True)


# --- rcclx-overlap: the benchmark of compute beside calls across hosts -----------------------


def test_overlap_benchmark_runs_and_checks_its_result():
    """rcclx-overlap (benchmarks/rcclx_benchmarks/overlap.py) end to end, small: both ranks
    finish, the all_reduce of ones it checks at the end is right, and rank 0 prints the ratio."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "rcclx_benchmarks.overlap", "--bytes", "1M", "--calls", "2"]
    proc = subprocess.run(
        [*cmd, "--rounds", "1"], capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "together / sum" in proc.stdout, proc.stdout
