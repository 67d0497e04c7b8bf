"""async_op=True: every collective returns a Work; several in flight complete in order, with
correct results; wait(timeout) times out while a peer is late; groups run asynchronously."""

import gc
import time

import checks
import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch


def _async_rank(ctx):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    nxt, prv = (me + 1) % n, (me - 1) % n
    check, join = checks.same_bits, checks.join_problems
    count = 3001
    out = {}
    works = {}
    # Everything in flight at once; buffers are distinct so nothing depends on order.
    ar = {a: np.full(count, me + 1.0) for a in ("ring", "dda_flat", "dda_tree")}
    for a, buf in ar.items():
        works[f"all_reduce {a}"] = comm.all_reduce(buf, algo=a, async_op=True)
    red = np.zeros(count)
    works["reduce"] = comm.reduce(np.full(count, me + 1.0), red, root=n - 1, async_op=True)
    bc = np.arange(count, dtype=np.int32) if me == 0 else np.zeros(count, dtype=np.int32)
    works["broadcast"] = comm.broadcast(bc, root=0, async_op=True)
    ag = np.zeros(n * count, dtype=np.int64)
    works["all_gather"] = comm.all_gather(np.full(count, me, dtype=np.int64), ag, async_op=True)
    rs = np.zeros(count, dtype=np.float32)
    works["reduce_scatter"] = comm.reduce_scatter(
        np.tile(np.arange(count, dtype=np.float32), n), rs, op=rc.RedOp.MAX, async_op=True
    )
    a2a = np.zeros(n * count, dtype=np.int32)
    works["all_to_all"] = comm.all_to_all(
        np.repeat(np.arange(n, dtype=np.int32) + 10 * me, count), a2a, async_op=True
    )
    ga = np.zeros(n * count, dtype=np.uint8) if me == 0 else None
    works["gather"] = comm.gather(np.full(count, me, dtype=np.uint8), ga, root=0, async_op=True)
    sc = np.zeros(count, dtype=np.uint8)
    send = np.repeat(np.arange(n, dtype=np.uint8), count) if me == n - 1 else None
    works["scatter"] = comm.scatter(send, sc, root=n - 1, async_op=True)
    works["barrier"] = comm.barrier(async_op=True)
    # A group: its Work is what group_end (or the context manager's handle) returns.
    ring_in = np.full(count, me, dtype=np.int32)
    ring_out = np.zeros(count, dtype=np.int32)
    with comm.group(async_op=True) as g:
        comm.send(ring_in, nxt)
        comm.recv(ring_out, prv)
    works["group"] = g.work
    # Temporaries: the binding keeps them alive until the work completes.
    tmp_out = np.zeros(count)
    works["temporary sendbuf"] = comm.all_reduce(np.ones(count), tmp_out, async_op=True)
    gc.collect()
    _ = [np.full(count, 7.0) for _ in range(8)]

    kinds = {k: type(w).__name__ for k, w in works.items()}
    for k, w in works.items():
        assert w.wait() is True, k
    want = {
        **{f"all_reduce {a}": check(ar[a], np.full(count, n * (n + 1) / 2)) for a in ar},
        "reduce": check(red, np.full(count, n * (n + 1) / 2))
        if me == n - 1
        else check(red, np.zeros(count)),
        "broadcast": check(bc, np.arange(count, dtype=np.int32)),
        "all_gather": check(ag, np.repeat(np.arange(n, dtype=np.int64), count)),
        "reduce_scatter": check(rs, np.arange(count, dtype=np.float32)),
        "all_to_all": check(a2a, np.repeat(np.arange(n, dtype=np.int32) * 10 + me, count)),
        "gather": check(ga, np.repeat(np.arange(n, dtype=np.uint8), count)) if me == 0 else None,
        "scatter": check(sc, np.full(count, me, dtype=np.uint8)),
        "barrier": None,
        "group": check(ring_out, np.full(count, prv, dtype=np.int32)),
        "temporary sendbuf": check(tmp_out, np.full(count, float(n))),
    }
    for k, w in works.items():
        problem = want[k]
        if kinds[k] != "Work":
            problem = join(problem, f"returned {kinds[k]}, not a Work")
        if not w.is_completed():
            problem = join(problem, "not completed after wait()")
        out[f"async {k}"] = ("", problem)
    out["descriptions"] = (
        "",
        None
        if works["all_reduce ring"].description.startswith("all_reduce")
        else works["all_reduce ring"].description,
    )

    # A synchronous call queues behind pending asynchronous ones and returns after them.
    first = comm.all_reduce(np.full(50000, 1.0), algo="ring", async_op=True)
    y = np.full(5, 2.0)
    comm.all_reduce(y)
    out["sync after async"] = (
        "",
        join(
            None if first.is_completed() else "earlier async work still running",
            check(y, np.full(5, 2.0 * n)),
        ),
    )
    # Synchronous calls return None.
    out["sync returns None"] = (
        "",
        None if comm.all_reduce(np.ones(2)) is None else "sync call returned a Work",
    )

    # wait(timeout) while a peer is late: TimeoutError, and the work still completes later.
    z = np.full(10, 1.0)
    if me == 0:
        w = comm.all_reduce(z, async_op=True)
        try:
            w.wait(timeout=0.05)
            problem = "wait(timeout=0.05) returned while rank 1 was still asleep"
        except rc.TimeoutError as e:
            problem = None if "not completed after 50 ms" in str(e) else f"message: {e}"
        w.wait()
        problem = join(problem, check(z, np.full(10, float(n))))
    else:
        time.sleep(0.4)
        comm.all_reduce(z)
        problem = None
    out["wait timeout"] = ("", problem)
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_async_work(nranks):
    results = launch(_async_rank, nranks, env=H.CHUNK_ENV, timeout=60)
    checks.assert_cases(results, expect_cases=17)
