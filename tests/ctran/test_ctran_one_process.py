"""Ranks sharing one process (one thread each, as when one process drives several GPUs): the
topology tells them apart from ranks of other processes by pid and process token, windows work
between them over shm and tcp, and liveness checks never report a rank of this process dead
while a rank of another process that exits is still reported at once."""

from __future__ import annotations

import threading
import time

import ctran_helpers
import pytest

import ctran
from launcher import launch, run_threads


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_threads_form_one_group(transport, monkeypatch):
    monkeypatch.setenv("RCCLX_TRANSPORT", transport)
    uid = ctran.create_unique_id()
    nranks = 3

    def rank_main(r):
        group = ctran.PeerGroup.from_unique_id(uid, r, nranks)
        topo = group.topology
        out = {
            "same_process": [topo.same_process(r, p) for p in range(nranks)],
            "tokens": list(topo.process_tokens),
            "local": (topo.num_hosts, topo.local_size, topo.local_rank),
            "kinds": [group.transport_to(p) for p in range(nranks)],
            "problems": ctran_helpers.exercise_window(group, rounds=20, seq_signals=50),
        }
        for p in range(nranks):
            group.check_peer(p)  # every peer shares this pid: none may be reported dead
        group.bootstrap.barrier()  # (a tcp peer that destroyed its group is rightly reported)
        group.destroy()
        return out

    token = ctran.process_token()
    for r, res in enumerate(run_threads(rank_main, nranks)):
        assert res["problems"] == [], f"rank {r}: {res['problems']}"
        assert res["same_process"] == [True] * nranks
        assert res["tokens"] == [token] * nranks
        assert res["local"] == (1, nranks, r)
        assert res["kinds"] == ["self" if p == r else transport for p in range(nranks)]


def _token_and_topology(ctx):
    import os

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    topo = group.topology
    out = (
        ctran.process_token(),
        os.getpid(),
        [topo.same_process(ctx.rank, p) for p in range(ctx.nranks)],
        list(topo.process_tokens),
    )
    group.destroy()
    return out


def test_processes_have_distinct_tokens():
    """Forked ranks (which inherit their parent's memory) each get a token of their own."""
    results = [r.value for r in launch(_token_and_topology, 3)]
    tokens = [token for token, _, _, _ in results]
    assert len(set(tokens)) == 3 and ctran.process_token() not in tokens
    for rank, (_, _, same, listed) in enumerate(results):
        assert same == [p == rank for p in range(3)]
        assert listed == tokens


def _survivor_or_victim(ctx, timeout_ms):
    """Ranks 2 * ctx.rank + t as threads; process 1 (ranks 2, 3) exits once the group exists,
    while process 0's ranks wait on it, then check each other."""
    import os

    import ctran

    uid = ctx.unique_id()
    made = threading.Barrier(2)

    def rank_main(t):
        r = 2 * ctx.rank + t
        group = ctran.PeerGroup.from_unique_id(uid, r, 4)
        win = group.create_window(4096, num_signals=2)
        group.bootstrap.barrier()
        made.wait()
        if ctx.rank == 1:
            return None
        start = time.monotonic()
        try:
            win.wait_signal(0, 1, from_peer=2 + t)  # a rank of the other process
            outcome = "returned"
        except ctran.Error as e:
            outcome = f"{type(e).__name__}: {e}"
        elapsed = time.monotonic() - start
        # The sibling shares this pid: it is never reported dead itself, but the group has
        # failed, so checking it raises the dead process's failure.
        sibling = 1 - t
        try:
            group.check_peer(sibling)
            seen = "ok"
        except ctran.RemoteError as e:
            seen = str(e)
        others = []
        for p in (2, 3):
            try:
                group.check_peer(p)
                others.append("ok")
            except ctran.RemoteError:
                others.append("RemoteError")
        win.destroy()
        group.destroy()
        return {"outcome": outcome, "elapsed": elapsed, "sibling": seen, "others": others}

    res = run_threads(rank_main, 2, timeout=timeout_ms / 1000 + 30)
    if ctx.rank == 1:
        os._exit(3)
    return res


def test_dead_process_is_reported_and_ranks_sharing_a_pid_are_not():
    timeout_ms = 20000
    results = launch(
        _survivor_or_victim,
        2,
        timeout_ms,
        env={"RCCLX_TIMEOUT_MS": timeout_ms},
        expect_errors=True,
        timeout=60,
    )
    assert results[1].exitcode == 3
    assert results[0].ok, f"{results[0].error_type}: {results[0].error}\n{results[0].traceback}"
    for res in results[0].value:
        # Either rank of the dead process (the first one found fails the whole group).
        outcome = res["outcome"]
        assert outcome.startswith("RemoteError") and ("rank 2 " in outcome or "rank 3 " in outcome)
        assert res["elapsed"] < timeout_ms / 1000 / 2, f"found by the deadline, not the exit: {res}"
        assert res["sibling"].startswith(("rank 2 failed", "rank 3 failed")), res
        assert res["others"] == ["RemoteError", "RemoteError"], res
