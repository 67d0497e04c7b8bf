"""Creating communicators (by unique id, from a store, from the torchrun environment), a
single-rank communicator running every collective in this process, finalize and abort."""

import checks
import numpy as np
import pytest
import rcclx_cases
import rcclx_helpers as H

import rcclx_core as rc
from launcher import launch


def test_single_rank_runs_every_collective_in_process():
    comm = rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1)
    assert (comm.rank, comm.size, comm.num_hosts, comm.direct_access) == (0, 1, 1, True)
    cases = H.reduction_cases()[::4]
    out = {}
    for algo in ("ring", "dda_flat", "dda_tree"):
        out.update(
            {f"{algo}: {k}": v for k, v in rcclx_cases.all_reduce(comm, algo, cases=cases).items()}
        )
    out.update(rcclx_cases.reduce(comm, cases=cases))
    out.update(rcclx_cases.reduce_scatter(comm, cases=cases))
    out.update(rcclx_cases.reduce_scatter(comm, cases=cases, variable=True))
    out.update(rcclx_cases.broadcast_gather_scatter(comm))
    out.update(rcclx_cases.all_gather(comm))
    out.update(rcclx_cases.all_to_all(comm))
    checks.assert_cases([out])
    # send to and receive from oneself, in a group
    got = np.zeros(5000)
    with comm.group():
        comm.send(np.arange(5000.0), 0)
        comm.recv(got, 0)
    assert np.array_equal(got, np.arange(5000.0))
    comm.barrier()
    comm.finalize()
    comm.destroy()
    assert comm.destroyed


def _from_store_rank(ctx):
    import rcclx_core as rc

    comm = rc.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix="from-store-test")
    x = np.full(7, ctx.rank + 1, dtype=np.int64)
    comm.all_reduce(x, op=rc.RedOp.PROD)
    comm.destroy()
    return x.tolist()


@pytest.mark.parametrize("nranks", [2, 3])
def test_from_store(nranks):
    results = launch(_from_store_rank, nranks, timeout=60)
    fact = int(np.prod(np.arange(1, nranks + 1)))
    assert [r.value for r in results] == [[fact] * 7] * nranks


def _from_env_rank(ctx):
    import rcclx_core as rc

    comm = rc.Communicator.from_env()
    info = (comm.rank, comm.size)
    x = np.full(3, float(comm.rank))
    comm.all_reduce(x, op=rc.RedOp.MAX)
    ctx.barrier("done")  # rank 0 hosts the bootstrap store
    comm.destroy()
    return info, x.tolist()


def test_from_env():
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "1",  # torchrun's store (unused): RCCLX_BOOTSTRAP_PORT names ours
        "WORLD_SIZE": 3,
        "RCCLX_TIMEOUT_MS": 10000,
    }
    for _ in range(3):  # another process may take the free port before rank 0 binds it
        env["RCCLX_BOOTSTRAP_PORT"] = checks.free_port()
        results = launch(
            _from_env_rank,
            3,
            env=env,
            rank_env=lambda r: {"RANK": r},
            timeout=60,
            expect_errors=True,
        )
        if "in use" not in (results[0].error or ""):
            break
    outcomes = [(r.error_type, r.error) for r in results]
    assert all(r.ok for r in results), outcomes
    assert [r.value for r in results] == [((r, 3), [2.0] * 3) for r in range(3)]


def _finalize_abort_rank(ctx):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    works = [comm.all_reduce(np.ones(20000), async_op=True) for _ in range(4)]
    comm.finalize()  # waits for everything submitted
    finalized = all(w.is_completed() for w in works)
    sub = comm.split(0)
    sub.abort()
    outcomes = {}
    for what, call in {
        "all_reduce": lambda: sub.all_reduce(np.ones(3)),
        "abort": sub.abort,
        "destroy": sub.destroy,
    }.items():
        try:
            call()
            outcomes[what] = "returned"
        except rc.InvalidUsageError as e:
            outcomes[what] = "destroyed or aborted" in str(e) or "already" in str(e)
    comm.destroy()
    return finalized, sub.destroyed, outcomes


def test_finalize_and_abort():
    results = launch(_finalize_abort_rank, 2, timeout=60)
    for res in results:
        finalized, destroyed, outcomes = res.value
        assert finalized and destroyed
        assert outcomes == {"all_reduce": True, "abort": True, "destroy": True}


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("tree_lines_max_bytes=-1", "tree_lines_max_bytes=-1 must be a non-negative integer"),
        ("lines_min_warp_lines=0", "lines_min_warp_lines=0 must be a positive integer"),
        ("tree_threads=100", "tree_threads=100 must be a multiple of 32"),
        ("tree_max_blocks=4096", "tree_max_blocks=4096 exceeds the 128-block limit"),
        (
            "lines_max_blocks=300",
            "lines_max_blocks=300 exceeds the 256-block limit",
        ),
        ("pdl=2", "pdl=2 must be 0 or 1"),
        ("tree_stagger_bytes=-1", "tree_stagger_bytes=-1 must be a non-negative integer"),
        ("flat_lines_min_bytes=0", "flat_lines_min_bytes=0 must be a positive integer"),
        ("tree_lines=1", "unknown name 'tree_lines'"),
    ],
)
def test_bad_gpu_tuning_fails_at_creation(monkeypatch, spec, fragment):
    """RCCLX_GPU_TUNING is checked when a communicator is created, with or without a GPU."""
    monkeypatch.setenv("RCCLX_GPU_TUNING", spec)
    with pytest.raises(rc.InvalidArgumentError, match=fragment):
        rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1)


def test_gpu_tuning_accepts_the_line_settings(monkeypatch):
    monkeypatch.setenv(
        "RCCLX_GPU_TUNING",
        "tree_lines_max_bytes=0,flat_lines_min_bytes=4096,lines_min_warp_lines=8,"
        "lines_threads=128,lines_max_blocks=256,tree_stagger_bytes=0,pdl=0",
    )
    comm = rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1)
    x = np.arange(5, dtype=np.float32)
    comm.all_reduce(x)
    assert x.tolist() == [0, 1, 2, 3, 4]
    comm.destroy()


def test_bad_graph_register_fails_at_creation(monkeypatch):
    """RCCLX_GPU_GRAPH_REGISTER is read (and checked) when a communicator is created."""
    monkeypatch.setenv("RCCLX_GPU_GRAPH_REGISTER", "maybe")
    with pytest.raises(rc.InvalidArgumentError, match="RCCLX_GPU_GRAPH_REGISTER"):
        rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1)


def test_host_communicator_holds_no_graph_registrations(monkeypatch):
    monkeypatch.setenv("RCCLX_GPU_GRAPH_REGISTER", "1")
    comm = rc.Communicator.from_unique_id(rc.create_unique_id(), 0, 1)
    assert rc._testing.graph_registrations(comm) == 0
    assert rc._testing.symmetric_calls(comm) == 0
    comm.destroy()
