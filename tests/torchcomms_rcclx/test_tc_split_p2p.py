"""split (every rank passes its group's ranks; [] joins none; duplicates, lists leaving out
the caller and lists that differ between ranks raise), send / recv, and batched sends and
receives in a ring, 2 and 3 ranks."""

from __future__ import annotations

import checks
import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")


def _split_rank(ctx):
    import rcclx_core

    comm = H.comm_of(ctx, "world")
    n, me = comm.get_size(), comm.get_rank()
    out = {}
    # Groups: the last rank alone, the others together (in reverse order).
    group = [n - 1] if me == n - 1 else list(range(n - 1))[::-1]
    child = comm.split(group, "child")
    t = torch.full((4,), float(me + 1))
    child.all_reduce(t, H.op_of("SUM"), False)
    want = torch.full((4,), float(sum(r + 1 for r in group)))
    out["child all_reduce"] = ("", H.compare(t, want))
    out["child rank"] = ("", None if child.get_rank() == group.index(me) else "wrong rank")
    out["child name"] = ("", None if child.get_name() == "child" else child.get_name())
    # Ranks that are not neighbours: the even ranks together, the odd ones together.
    evens_odds = [r for r in range(n) if r % 2 == me % 2]
    parity = comm.split(evens_odds, "parity")
    t = torch.full((2,), float(me + 1))
    parity.all_reduce(t, H.op_of("SUM"), False)
    want = torch.full((2,), float(sum(r + 1 for r in evens_odds)))
    out["non-contiguous split all_reduce"] = ("", H.compare(t, want))
    parity.finalize()
    # [] on every rank but rank 0, which forms a communicator of itself.
    solo = comm.split([0] if me == 0 else [], "solo")
    out["split []"] = ("", None if (solo is None) == (me != 0) else f"got {solo}")
    for bad, message in (([me, me], "twice"), ([(me + 1) % n], "leave out this rank")):
        try:
            comm.split(bad, "bad")
            out[f"split {message}"] = ("", "did not raise")
        except rcclx_core.InvalidArgumentError as e:
            out[f"split {message}"] = ("", None if message in str(e) else str(e))
    # Every rank names all ranks, rank 0 in another order: one color, so one communicator
    # would form; every rank raises instead, and the parent stays usable.
    mixed = list(range(n)) if me != 0 else list(range(n))[::-1]
    try:
        comm.split(mixed, "mixed")
        out["split lists differ"] = ("", "did not raise")
    except rcclx_core.InvalidArgumentError as e:
        out["split lists differ"] = ("", None if "must pass the same list" in str(e) else str(e))
    t = torch.ones(3)
    comm.all_reduce(t, H.op_of("SUM"), False)
    out["parent after split lists differ"] = ("", H.compare(t, torch.full((3,), float(n))))
    child.finalize()
    if solo is not None:
        solo.finalize()
    comm.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_split(nranks):
    checks.assert_cases(launch(_split_rank, nranks))


def _p2p_rank(ctx):
    import rcclx_core

    comm = H.comm_of(ctx, "p2p")
    n, me = comm.get_size(), comm.get_rank()
    nxt, prv = (me + 1) % n, (me - 1) % n
    out = {}
    for dtype in H.DTYPES:
        for count in H.COUNTS:
            key = f"{H.name_of(dtype)} count={count}"
            mine, theirs = H.make(me, count, dtype), H.make(prv, count, dtype)
            # A ring of plain send / recv: even ranks send first (on 3 ranks ranks 0 and 2 both do:
            # a send of at most one FIFO slot completes before its receive is posted).
            got = checks.poison(torch.empty(count, dtype=dtype))
            if me % 2 == 0:
                comm.send(mine, nxt, False)
                comm.recv(got, prv, False)
            else:
                r = comm.recv(got, prv, True)
                comm.send(mine, nxt, True).wait()
                r.wait()
            out[f"send/recv {key}"] = ("", H.compare(got, theirs))
            # The same ring as one batch, sync and async; both directions at once.
            for a in (False, True):
                back = checks.poison(torch.empty(count, dtype=dtype))
                fwd = checks.poison(torch.empty(count, dtype=dtype))
                # torchcomms' Python-backend interface has no batches: the backend's, there.
                batches = comm.get_backend_impl() if H.REAL_TORCHCOMMS else comm
                batch = batches.batch_op_create()
                batch.send(mine, nxt)
                batch.send(mine, prv)
                batch.recv(fwd, prv)
                batch.recv(back, nxt)
                w = batch.issue(a)
                w.wait()
                problem = checks.join_problems(
                    H.compare(fwd, theirs, "SUM"),
                    H.compare(back, H.make(nxt, count, dtype)),
                    None if len(batch.ops) == 4 and w.is_completed() else "batch state",
                )
                out[f"batch async={a} {key}"] = ("", problem)
    # A batch with a bad operation raises at issue and runs none of its operations; the next
    # batch runs as usual.
    batches = comm.get_backend_impl() if H.REAL_TORCHCOMMS else comm
    mine, got = H.make(me, 6, torch.float32), torch.full((6,), -1.0)
    bad = batches.batch_op_create()
    bad.send(mine, nxt)
    bad.recv(got, prv)
    bad.send(mine, n + 5)
    try:
        bad.issue(False)
        problem = "did not raise"
    except rcclx_core.InvalidArgumentError as e:
        problem = None if f"peer {n + 5}" in str(e) else str(e)
    out["batch with a bad operation"] = (
        "",
        checks.join_problems(problem, H.compare(got, torch.full((6,), -1.0))),
    )
    good = batches.batch_op_create()
    good.send(mine, nxt)
    good.recv(got, prv)
    good.issue(False).wait()
    out["batch after the bad one"] = ("", H.compare(got, H.make(prv, 6, torch.float32)))
    comm.finalize()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_send_recv_and_batches(nranks):
    checks.assert_cases(launch(_p2p_rank, nranks))
