"""The fault matrix beyond a dead peer (test_rcclx_failure_propagation.py): abort from another
thread while a collective is blocked, destroy and abort with work still pending, and the order
in which ranks destroy their communicators. Each ends in results or in errors naming a rank,
within a bound and never in a hang, and leaves no fd or thread behind.
"""

from __future__ import annotations

import pytest

from launcher import launch

TIMEOUT_MS = 10_000  # far longer than any bound below: a timeout cannot pass for propagation
COUNT = (1 << 20) // 4


def _now_held():
    import os

    with open("/proc/self/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return len(os.listdir("/proc/self/fd")), threads


def _held(before=None):
    """What a leak would leave: (open fds, threads) of this process. With `before`, waits up to
    two seconds for the count to come back to it (a joined thread leaves /proc a moment later)."""
    import time

    held = _now_held()
    for _ in range(100):
        if before is None or (held[0] <= before[0] and held[1] <= before[1]):
            break
        time.sleep(0.02)
        held = _now_held()
    return held


def _comm(ctx, prefix: str):
    import rcclx_core as rc

    return rc.Communicator.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix=prefix)


def _warm(ctx):
    """One communicator made and destroyed: what a process keeps after its first is no leak."""
    _comm(ctx, "fault/warm").destroy()


def _abort_mid_collective(ctx, aborter: int, staller: int):
    import threading
    import time

    import numpy as np

    import rcclx_core as rc

    _warm(ctx)
    before = _held()
    comm = _comm(ctx, "fault/abort")
    x = np.ones(COUNT, np.float32)
    comm.all_reduce(x)  # every rank is in before anything goes wrong
    ctx.store().set(f"fault/abort/in{ctx.rank}", b"1")
    aborted_at = None
    if ctx.rank == aborter:

        def abort_later():
            nonlocal aborted_at
            time.sleep(0.3)
            aborted_at = time.time()
            comm.abort()

        thread = threading.Thread(target=abort_later)
        thread.start()
    if ctx.rank == staller:
        time.sleep(1.5)  # alive, but late: the others block in the call below
    start = time.time()
    try:
        comm.all_reduce(x)
        outcome = ("returned", "")
    except rc.Error as e:
        outcome = (type(e).__name__, str(e))
    raised_at = time.time()
    if ctx.rank == aborter:
        thread.join()
    else:
        comm.destroy()
    return {
        "outcome": outcome,
        "start": start,
        "raised_at": raised_at,
        "aborted_at": aborted_at,
        "held": (before, _held(before)),
    }


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_abort_from_another_thread_ends_a_blocked_collective_everywhere(transport):
    aborter, staller = 1, 2
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_abort_mid_collective, 3, aborter, staller, env=env, timeout=60)
    aborted_at = results[aborter].value["aborted_at"]
    assert aborted_at is not None
    for res in results:
        kind, message = res.value["outcome"]
        assert kind != "returned", f"rank {res.rank}: the all_reduce returned after an abort"
        if res.rank == aborter:
            # Its own call, blocked on the late rank, ends with the abort.
            assert res.value["raised_at"] - aborted_at < 1.0, res.value
            assert "abort" in message, message
            continue
        assert kind == "RemoteError", f"rank {res.rank}: {kind}: {message}"
        assert f"rank {aborter}" in message and "aborted" in message, message
        # The blocked rank hears of it within a second; the late one at its next call.
        ends = max(res.value["start"], aborted_at)
        assert res.value["raised_at"] - ends < 1.0, (res.rank, res.value)
    for res in results:
        (fds0, threads0), (fds1, threads1) = res.value["held"]
        assert fds1 <= fds0 and threads1 <= threads0, (res.rank, res.value["held"])


def _destroy_with_pending_work(ctx, late: int):
    import time

    import numpy as np

    _warm(ctx)
    before = _held()
    comm = _comm(ctx, "fault/pending")
    bufs = [np.full(COUNT, float(ctx.rank + k), np.float32) for k in range(4)]
    if ctx.rank == late:
        time.sleep(0.3)
    works = [comm.all_reduce(b, async_op=True) for b in bufs]
    start = time.monotonic()
    comm.destroy()  # no wait(): destroy finishes what was submitted first
    destroy_s = time.monotonic() - start
    done = [w.is_completed() for w in works]
    for w in works:
        w.wait()
    n = ctx.nranks
    wrong = [k for k, b in enumerate(bufs) if not np.all(b == sum(r + k for r in range(n)))]
    return {"destroy_s": destroy_s, "done": done, "wrong": wrong, "held": (before, _held(before))}


def test_destroy_with_pending_work_finishes_it_first():
    results = launch(_destroy_with_pending_work, 3, 2, env={"RCCLX_TIMEOUT_MS": TIMEOUT_MS})
    for res in results:
        assert res.value["done"] == [True] * 4, (res.rank, res.value)
        assert res.value["wrong"] == [], (res.rank, res.value)
        assert res.value["destroy_s"] < 2.0, (res.rank, res.value)
        (fds0, threads0), (fds1, threads1) = res.value["held"]
        assert fds1 <= fds0 and threads1 <= threads0, (res.rank, res.value["held"])


def _abort_with_pending_work(ctx, aborter: int, absent: int):
    import time

    import numpy as np

    import rcclx_core as rc

    _warm(ctx)
    before = _held()
    comm = _comm(ctx, "fault/abort_pending")
    comm.barrier()
    x = np.ones(COUNT, np.float32)
    outcome, waited_s = None, 0.0
    if ctx.rank != absent:
        work = comm.all_reduce(x, async_op=True)  # cannot finish: one rank never joins it
        if ctx.rank == aborter:
            time.sleep(0.2)
            comm.abort()
        start = time.monotonic()
        try:
            work.wait()
            outcome = ("returned", "")
        except rc.Error as e:
            outcome = (type(e).__name__, str(e))
        waited_s = time.monotonic() - start
    else:
        time.sleep(1.0)
    if ctx.rank != aborter:
        comm.destroy()
    return {"outcome": outcome, "waited_s": waited_s, "held": (before, _held(before))}


def test_abort_with_pending_work_fails_that_work_on_every_rank():
    aborter, absent = 0, 2
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_abort_with_pending_work, 3, aborter, absent, env=env, timeout=60)
    for res in results:
        if res.rank == absent:
            continue
        kind, message = res.value["outcome"]
        assert kind != "returned", f"rank {res.rank}: pending work completed after an abort"
        assert res.value["waited_s"] < 1.5, (res.rank, res.value)
        if res.rank != aborter:
            assert kind == "RemoteError" and f"rank {aborter}" in message, message
    for res in results:
        (fds0, threads0), (fds1, threads1) = res.value["held"]
        assert fds1 <= fds0 and threads1 <= threads0, (res.rank, res.value["held"])


def _gone_without_destroy(ctx, how: str):
    import os
    import time

    import numpy as np

    import rcclx_core as rc

    # Through a unique id: rank 0 hosts the communicator's store, and its destroy waits for
    # every rank's (so that it does not leave before the others are done with the store).
    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    comm.all_reduce(np.ones(16, np.float32))
    if ctx.rank == ctx.nranks - 1:
        time.sleep(1.0)  # rank 0 is in its destroy by now
        if how == "exit":
            os._exit(3)
        comm.abort()
        return None
    start = time.monotonic()
    comm.destroy()
    return {"destroy_s": time.monotonic() - start}


@pytest.mark.parametrize("transport", ["shm", "tcp"])
@pytest.mark.parametrize("how", ["abort", "exit"])
def test_the_store_host_does_not_wait_at_destroy_for_a_rank_that_left_without(transport, how):
    # The last rank aborts (its communicator fails for everyone) or exits instead of
    # destroying: the store's host stops waiting for it once it knows, not at its deadline.
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS, "RCCLX_TRANSPORT": transport}
    results = launch(_gone_without_destroy, 3, how, env=env, expect_errors=how == "exit")
    for res in results[:2]:
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
    assert results[0].value["destroy_s"] < 3.0, results[0].value


def _destroy_order(ctx, crossing: bool):
    import time

    import numpy as np

    import rcclx_core as rc

    _warm(ctx)
    a, b = _comm(ctx, "fault/order_a"), _comm(ctx, "fault/order_b")
    for c in (a, b):
        c.all_reduce(np.ones(16, np.float32))
    order = (b, a) if crossing and ctx.rank % 2 else (a, b)
    if ctx.rank == 0:
        time.sleep(0.5)  # one rank late to its destroys
    start = time.monotonic()
    errors = []
    for c in order:
        try:
            c.destroy()
        except rc.Error as e:
            errors.append(f"{type(e).__name__}: {e}")
    return {"destroy_s": time.monotonic() - start, "errors": errors}


@pytest.mark.parametrize("crossing", [False, True], ids=["same_order", "crossing_order"])
def test_destroys_in_any_order_end_without_a_hang(crossing):
    # destroy finalizes this rank's own work and releases: it does not wait for the peers'
    # destroys, so neither a late rank nor crossing orders make a rank wait on another.
    results = launch(_destroy_order, 3, crossing, env={"RCCLX_TIMEOUT_MS": TIMEOUT_MS})
    for res in results:
        assert res.value["errors"] == [], (res.rank, res.value)
        assert res.value["destroy_s"] < 1.5, (res.rank, res.value)
