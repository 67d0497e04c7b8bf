"""send / recv, groups (ring exchange, all-to-all, several messages per peer, self), barrier."""

import time

import checks
import numpy as np
import pytest
import rcclx_helpers as H

from launcher import launch

SPECS = [H.SPEC[n] for n in ("int8", "float16", "float32", "float64", "bfloat16", "float8_e4m3")]


def _p2p_rank(ctx):
    import rcclx_core as rc

    comm = H.comm_of(ctx)
    n, me = comm.size, comm.rank
    nxt, prv = (me + 1) % n, (me - 1) % n
    check = checks.same_bits
    out = {}
    for spec in SPECS:
        kw = spec.kw()
        for count in H.COUNTS:
            data = [H.make_bytes(spec, p, count, tag=10) for p in range(n)]
            # Blocking pairs (0,1), (2,3): the lower rank sends first, the higher receives
            # first; a large message only completes as the receiver drains the FIFO.
            partner = me ^ 1
            problem = None  # (the last of an odd number of ranks has no partner)
            if partner < n:
                got = checks.poison(np.empty(count, dtype=spec.storage))
                if me < partner:
                    comm.send(data[me], partner, **kw)
                    comm.recv(got, partner, **kw)
                else:
                    comm.recv(got, partner, **kw)
                    comm.send(data[me], partner, **kw)
                problem = check(got, data[partner])
            out[f"pair {spec.name} count={count}"] = ("", problem)
            # Ring exchange in a group: every rank sends and receives at once.
            got = checks.poison(np.empty(count, dtype=spec.storage))
            with comm.group():
                comm.send(data[me], nxt, **kw)
                comm.recv(got, prv, **kw)
            out[f"group ring {spec.name} count={count}"] = ("", check(got, data[prv]))
            # All-to-all by a group, self included.
            blocks = [H.make_bytes(spec, me * n + p, count, tag=11) for p in range(n)]
            recv = [checks.poison(np.empty(count, dtype=spec.storage)) for _ in range(n)]
            comm.group_start()
            for p in range(n):
                comm.recv(recv[p], p, **kw)
                comm.send(blocks[p], p, **kw)
            comm.group_end()
            problems = [
                check(recv[p], H.make_bytes(spec, p * n + me, count, tag=11), f"from {p}: ")
                for p in range(n)
            ]
            out[f"group all_to_all {spec.name} count={count}"] = (
                "",
                checks.join_problems(*problems),
            )
    # Several messages to one peer in one group match in order, and sizes may differ.
    sizes = [3, 0, 5000, 1]
    msgs = [np.arange(s, dtype=np.int32) * (me + 1) + k for k, s in enumerate(sizes)]
    got = [np.zeros(s, dtype=np.int32) for s in sizes]
    with comm.group():
        for k in range(len(sizes)):
            comm.send(msgs[k], nxt)
            comm.recv(got[k], prv)
    want = [np.arange(s, dtype=np.int32) * (prv + 1) + k for k, s in enumerate(sizes)]
    out["group ordered messages"] = (
        "",
        checks.join_problems(*[check(g, w) for g, w in zip(got, want)]),
    )
    # Nested groups run when the outermost ends; a collective recorded in a group runs too.
    # The send buffer is a temporary: the binding must keep it alive until the group ends.
    x = np.full(7, me + 1.0)
    got = np.zeros(7)
    comm.group_start()
    comm.all_reduce(x)
    comm.group_start()
    comm.send(np.full(4, float(me)), nxt)
    comm.recv(got[:4], prv)
    comm.group_end()
    recorded = got[:4].copy()  # not run yet
    comm.group_end()
    out["nested group"] = (
        "",
        checks.join_problems(
            check(recorded, np.zeros(4), "ran before the outer group_end: "),
            check(got[:4], np.full(4, float(prv))),
            check(x, np.full(7, n * (n + 1) / 2)),
        ),
    )
    # Point-to-point between collectives keeps both in step.
    y = np.full(3, float(me))
    comm.all_reduce(y, op=rc.RedOp.MAX)
    problem = None
    if me == 0:
        comm.send(np.arange(10.0), n - 1)
    elif me == n - 1:
        z = np.zeros(10)
        comm.recv(z, 0)
        problem = check(z, np.arange(10.0))
    out["send between collectives"] = ("", problem)
    comm.all_reduce(y, op=rc.RedOp.MAX)
    out["collectives around p2p"] = ("", check(y, np.full(3, n - 1.0)))
    # A group whose block raises runs none of its calls (every rank raises on the same bad
    # call), and the communicator stays in step for the next ones.
    a = np.full(5, me + 1.0)
    got = np.full(5, -1.0)
    raised = ""
    try:
        with comm.group():
            comm.all_reduce(a)
            comm.send(a, nxt)
            comm.recv(got, prv)
            comm.all_reduce(a, np.zeros(3))
    except ValueError as e:
        raised = str(e)
    out["group left by an exception runs nothing"] = (
        "",
        checks.join_problems(
            None if "recvbuf has 3 elements" in raised else f"raised {raised!r}",
            check(a, np.full(5, me + 1.0), "all_reduce ran: "),
            check(got, np.full(5, -1.0), "recv ran: "),
        ),
    )
    comm.group_start()
    comm.all_reduce(a)
    comm.group_start()
    comm.send(a, nxt)
    comm.recv(got, prv)
    comm.group_cancel()  # every level
    comm.all_reduce(a)
    out["group_cancel drops the group"] = ("", check(a, np.full(5, n * (n + 1) / 2)))
    with comm.group():
        comm.send(a, nxt)
        comm.recv(got, prv)
    out["groups after a cancelled one"] = ("", check(got, np.full(5, n * (n + 1) / 2)))
    # Barrier: nobody leaves before the last rank arrives.
    comm.barrier()
    if me == 0:
        time.sleep(0.3)
    t0 = time.monotonic()
    comm.barrier()
    waited = time.monotonic() - t0
    out["barrier waited"] = (
        "",
        None if me == 0 or waited > 0.2 else f"left the barrier after {waited:.3f} s",
    )
    comm.destroy()
    return out


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_send_recv_and_groups(nranks):
    results = launch(_p2p_rank, nranks, env=H.CHUNK_ENV, timeout=120)
    checks.assert_cases(results, expect_cases=3 * len(SPECS) * len(H.COUNTS) + 8)


def _empty_group_rank(ctx):
    """Rank 0 queues an async all_reduce that waits for rank 1 (two seconds late), then opens
    and closes a group with nothing in it: that has nothing to run, so it returns at once
    instead of waiting behind the all_reduce (as a group of only GPU calls across hosts would
    have waited behind their whole exchange)."""
    comm = H.comm_of(ctx)
    x = np.ones(1024, dtype=np.float32)
    if ctx.rank == 1:
        time.sleep(2.0)
        comm.all_reduce(x)
        comm.destroy()
        return None
    work = comm.all_reduce(x, async_op=True)
    start = time.monotonic()
    comm.group_start()
    empty = comm.group_end()
    returned_after = time.monotonic() - start
    finished_before = work.is_completed()
    if empty is not None:
        empty.wait()  # an empty group's Work is complete
    work.wait()
    comm.destroy()
    return {
        "returned_after": returned_after,
        "all_reduce_done": finished_before,
        "sum": float(x[0]),
    }


def test_an_empty_group_does_not_wait_for_earlier_calls():
    rank0 = launch(_empty_group_rank, 2, timeout=60)[0].value
    assert rank0["returned_after"] < 1.0, rank0
    assert not rank0["all_reduce_done"], rank0  # it was still waiting for rank 1
    assert rank0["sum"] == 2.0, rank0
