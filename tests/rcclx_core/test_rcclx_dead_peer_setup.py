"""A rank that dies while the others create a communicator from this one (split by color or by
list): the survivors raise a RemoteError naming it within seconds, not
at RCCLX_TIMEOUT_MS (a minute here), over shm and over tcp. The waits of these steps are on
the bootstrap store, which cannot see a process die; the communicator's transports can, and
the store waits ask them."""

from __future__ import annotations

import time

import pytest

from launcher import launch

TIMEOUT_MS = "60000"
WITHIN_S = 10.0  # far below the timeout: the death, not the timeout, ended the wait


def _dying_rank(ctx, step, victim):
    import os

    import numpy as np

    import rcclx_core as rc

    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    x = np.ones(4)
    comm.all_reduce(x)  # connected: every rank's transports are up
    if ctx.rank == victim:
        time.sleep(0.3)  # the others are waiting in the step by now
        os._exit(0)
    start = time.monotonic()
    try:
        if step == "split":
            comm.split(0, ctx.rank)
        else:
            comm.split_ranks(list(range(ctx.nranks)))
        outcome = ("returned", "")
    except rc.Error as e:
        outcome = (type(e).__name__, str(e))
    took = time.monotonic() - start
    comm.destroy()
    return {"outcome": outcome, "took": took}


@pytest.mark.parametrize("transport", ["shm", "tcp"])
@pytest.mark.parametrize("step", ["split", "split_ranks"])
def test_a_rank_dying_during_a_split_is_named_at_once(step, transport):
    victim = 2  # rank 0 serves the unique id's store
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_dying_rank, 3, step, victim, env=env, expect_errors=True, timeout=90)
    for r in results:
        if r.rank == victim:
            continue
        assert r.ok, (r.rank, r.error, r.traceback)
        kind, message = r.value["outcome"]
        assert kind == "RemoteError", (r.rank, kind, message)
        assert f"rank {victim}" in message, (r.rank, message)
        assert r.value["took"] < WITHIN_S, (r.rank, r.value["took"], message)
