"""The allreduce selector: as a pure function (no processes), and as a communicator applies it
(the RCCL_DDA_* thresholds and RCCLX_ALLREDUCE_ALGO from the environment, per-call hints, and
the algorithm that actually ran, read from the RCCLX_DEBUG=INFO log)."""

import os
import re
import tempfile

import numpy as np
import pytest
import rcclx_helpers as H

import rcclx_core as rc
from launcher import launch

F32, SUM = int(rc.DataType.FLOAT32), int(rc.RedOp.SUM)


def select(nbytes, **kw):
    kw.setdefault("dtype", F32)
    kw.setdefault("op", SUM)
    return rc._testing.select_all_reduce(nbytes, **kw)


@pytest.mark.parametrize(
    ("nbytes", "algo", "reason"),
    [
        (0, "dda_flat", "0 bytes <= flat max 32768"),
        (4, "dda_flat", "4 bytes <= flat max 32768"),
        (32 << 10, "dda_flat", "32768 bytes <= flat max 32768"),
        ((32 << 10) + 1, "dda_tree", "32769 bytes <= tree max 2097152"),
        (2 << 20, "dda_tree", "2097152 bytes <= tree max 2097152"),
        (
            (2 << 20) + 1,
            "dda_large",
            "2097153 bytes > tree max 2097152, deterministic (fewer bytes moved than the direct "
            "ring)",
        ),
    ],
)
def test_default_thresholds(nbytes, algo, reason):
    assert select(nbytes, nranks=3) == (algo, reason)


def test_unordered_reductions_and_two_ranks_take_the_ring_above_the_tree():
    ring = ("ring", "2097153 bytes > tree max 2097152")
    assert select((2 << 20) + 1, nranks=3, deterministic=False) == ring
    assert select((2 << 20) + 1, nranks=2) == ring
    assert select(2 << 20, nranks=3, deterministic=False)[0] == "dda_tree"


def test_thresholds_are_parameters():
    kw = dict(flat_max_bytes=100, tree_max_bytes=1000)
    assert select(100, **kw)[0] == "dda_flat"
    assert select(101, **kw) == ("dda_tree", "101 bytes <= tree max 1000")
    assert select(1000, **kw)[0] == "dda_tree"
    assert select(1001, nranks=4, **kw)[0] == "dda_large"
    assert select(1001, **kw) == ("ring", "1001 bytes > tree max 1000")
    # flat disabled: everything above zero bytes goes to the tree
    assert select(1, flat_max_bytes=0)[0] == "dda_tree"
    assert select(0, flat_max_bytes=0)[0] == "dda_flat"


@pytest.mark.parametrize("nranks", [2, 3, 4, 8])
@pytest.mark.parametrize("dtype", [rc.DataType.INT8, rc.DataType.BFLOAT16, rc.DataType.FLOAT64])
def test_choice_depends_on_bytes_and_topology_only(nranks, dtype):
    large = "ring" if nranks == 2 else "dda_large"
    for nbytes, algo in [(1024, "dda_flat"), (1 << 20, "dda_tree"), (2 << 30, large)]:
        assert select(nbytes, dtype=int(dtype), nranks=nranks)[0] == algo
        assert select(nbytes, dtype=int(dtype), nranks=nranks, op=int(rc.RedOp.MAX))[0] == algo


def test_several_hosts_or_no_direct_access_use_ring():
    assert select(1024, num_hosts=2) == ("ring", "ranks span 2 hosts")
    assert select(1 << 20, num_hosts=4, nranks=8) == ("ring", "ranks span 4 hosts")
    algo, reason = select(1024, direct_access=False)
    assert algo == "ring" and "no direct access" in reason


@pytest.mark.parametrize("forced", ["ring", "dda_flat", "dda_tree", "dda_large"])
def test_forced_algorithm_wins_on_one_host(forced):
    for nbytes in (0, 1024, 1 << 20, 2 << 30):
        assert select(nbytes, forced=forced) == (forced, f"forced by forced='{forced}'")


def test_forced_ring_runs_anywhere():
    assert select(1024, forced="ring", num_hosts=2)[0] == "ring"
    assert select(1024, forced="ring", direct_access=False)[0] == "ring"


@pytest.mark.parametrize("forced", ["dda_flat", "dda_tree", "dda_large"])
def test_forced_dda_on_two_hosts_raises(forced):
    with pytest.raises(rc.InvalidArgumentError) as e:
        select(1024, forced=forced, num_hosts=2)
    assert isinstance(e.value, ValueError)
    msg = str(e.value)
    assert forced in msg and "2 host(s)" in msg and f"forced='{forced}'" in msg


@pytest.mark.parametrize("forced", ["dda_flat", "dda_tree", "dda_large"])
def test_forced_dda_without_direct_access_raises(forced):
    with pytest.raises(rc.InvalidArgumentError, match="without direct access"):
        select(1024, forced=forced, direct_access=False)


def test_bad_selector_arguments():
    with pytest.raises(rc.InvalidArgumentError, match="unknown allreduce algorithm 'fastest'"):
        select(1024, forced="fastest")
    with pytest.raises(rc.InvalidArgumentError, match="op band is not valid for datatype float32"):
        select(1024, op=int(rc.RedOp.BAND))
    with pytest.raises(rc.InvalidArgumentError, match="datatype 12 is not a valid datatype"):
        select(1024, dtype=12)
    assert select(1024, dtype=int(rc.DataType.INT32), op=int(rc.RedOp.BAND))[0] == "dda_flat"


# --- the selector inside a communicator ---------------------------------------------------

INFO_ALGO = re.compile(r"all_reduce #\d+ \(\S+, \S+\): (\d+) bytes on \d+ ranks -> (\w+) \((.*)\)")


def _selection_rank(ctx, probes, run_sizes, hint):
    """comm.select_all_reduce for each probe; runs an auto (or hinted) allreduce of each size in
    run_sizes (float32 elements), checks it, and reads back which algorithm ran."""
    import rcclx_core as rc

    log = tempfile.TemporaryFile()
    os.dup2(log.fileno(), 2)  # the C++ log goes to fd 2
    rc.refresh_logging()
    comm = H.comm_of(ctx)
    n = comm.size
    chosen = [rc._testing.selection(comm, p) for p in probes]
    if hint is not None:
        chosen += [rc._testing.selection(comm, p, algo=hint) for p in probes]
    problems = []
    for count in run_sizes:
        x = np.full(count, ctx.rank + 1.0, dtype=np.float32)
        comm.all_reduce(x, algo=hint)
        if not np.array_equal(x, np.full(count, n * (n + 1) / 2, dtype=np.float32)):
            problems.append(f"wrong result for count {count}")
    comm.destroy()
    log.seek(0)
    ran = [(int(b), a, why) for b, a, why in INFO_ALGO.findall(log.read().decode(errors="replace"))]
    return chosen, ran, problems


def test_env_thresholds_choose_and_run():
    env = {
        "RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "1K",
        "RCCL_DDA_ALL_REDUCE_TREE_MAX_BYTES": "8192",
        "RCCLX_DEBUG": "INFO",
        **H.CHUNK_ENV,
    }
    probes = [1024, 1025, 8192, 8193]
    results = launch(_selection_rank, 3, probes, [256, 257, 2048, 2049], None, env=env, timeout=60)
    for res in results:
        chosen, ran, problems = res.value
        assert not problems
        assert chosen == [
            ("dda_flat", "1024 bytes <= flat max 1024"),
            ("dda_tree", "1025 bytes <= tree max 8192"),
            ("dda_tree", "8192 bytes <= tree max 8192"),
            (
                "dda_large",
                "8193 bytes > tree max 8192, deterministic (fewer bytes moved than the direct "
                "ring)",
            ),
        ]
        assert [(b, a) for b, a, _ in ran] == [
            (1024, "dda_flat"),
            (1028, "dda_tree"),
            (8192, "dda_tree"),
            (8196, "dda_large"),
        ]


def test_env_forced_algorithm_and_per_call_hint():
    env = {"RCCLX_ALLREDUCE_ALGO": "dda_tree", "RCCLX_DEBUG": "INFO"}
    results = launch(_selection_rank, 2, [16, 1 << 31], [5, 70000], None, env=env, timeout=60)
    for res in results:
        chosen, ran, problems = res.value
        assert not problems
        assert chosen == [("dda_tree", "forced by RCCLX_ALLREDUCE_ALGO=dda_tree")] * 2
        assert [(a, why) for _, a, why in ran] == [
            ("dda_tree", "forced by RCCLX_ALLREDUCE_ALGO=dda_tree")
        ] * 2
    # A per-call hint overrides the environment.
    results = launch(_selection_rank, 2, [16], [5, 70000], "ring", env=env, timeout=60)
    for res in results:
        chosen, ran, problems = res.value
        assert not problems
        assert chosen[1] == ("ring", "forced by algo='ring'")
        assert [(a, why) for _, a, why in ran] == [("ring", "forced by algo='ring'")] * 2
    # "auto" as a hint hands the choice back to the thresholds, ignoring the environment.
    results = launch(_selection_rank, 2, [16], [5], "auto", env=env, timeout=60)
    for res in results:
        chosen, ran, problems = res.value
        assert chosen[1] == ("dda_flat", "16 bytes <= flat max 32768")
        assert [a for _, a, _ in ran] == ["dda_flat"]


def _create_rank(ctx):
    import rcclx_core as rc

    try:
        H.comm_of(ctx)
        out = ("created", "")
    except rc.Error as e:
        out = (type(e).__name__, str(e))
    ctx.barrier("tried")  # rank 0 hosts the bootstrap store: it stays until all have tried
    return out


@pytest.mark.parametrize(
    ("env", "fragments"),
    [
        ({"RCCLX_ALLREDUCE_ALGO": "fastest"}, ["RCCLX_ALLREDUCE_ALGO", "fastest"]),
        (
            {"RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES": "lots"},
            ["RCCL_DDA_ALL_REDUCE_FLAT_MAX_BYTES", "lots"],
        ),
        ({"RCCLX_DDA_CHUNK_BYTES": "1024"}, ["RCCLX_DDA_CHUNK_BYTES=1024", "4096"]),
        ({"RCCLX_DDA_LARGE_CHUNK_BYTES": "64"}, ["RCCLX_DDA_LARGE_CHUNK_BYTES=64", "4096"]),
    ],
    ids=["algo", "threshold", "chunk", "large_chunk"],
)
def test_bad_knob_fails_every_rank_at_creation(env, fragments):
    results = launch(_create_rank, 2, env={"RCCLX_TIMEOUT_MS": 3000, **env}, timeout=30)
    for res in results:
        kind, msg = res.value
        assert kind == "InvalidArgumentError", res.value
        for f in fragments:
            assert f in msg, msg
