"""A rank that dies or stops in the middle of a collective: every survivor raises a RemoteError
naming it within a second of the first rank that noticed (the failure is shared, not
rediscovered by each rank on its own timeout), later calls fail at once the same way, and the
survivors carry on in a new communicator. Over shm and over tcp, for every collective and p2p:
a fixed matrix (the last rank, 0.2 s into the loop) and faults at random points (2 to 5 ranks,
any victim, SIGKILL or SIGSTOP, 0 to 0.5 s into the loop; RCCLX_FAULT_SEED, RCCLX_FAULT_CASES).
RCCLX_FAULT_REPORT=path appends each fault's figures (survivors' spread, time from the fault to
the last survivor's error) as JSON lines.
"""

from __future__ import annotations

import os
import time

import pytest

from launcher import launch

TIMEOUT_MS = 3000
MIB = 1 << 20
SPREAD_S = 1.0  # every survivor raises within this of the first


def _calls(comm, np, rc):
    """The collective loops of the matrix, 1 MiB per rank each, as argument-less calls."""
    n, me = comm.size, comm.rank
    count = MIB // 4
    block = count // n
    src = np.arange(count, dtype=np.float32)
    out = np.empty(count, np.float32)
    gathered = np.empty(block * n, np.float32)
    nxt, prv = (me + 1) % n, (me - 1) % n

    def ring():
        comm.group_start()
        comm.send(src, nxt)
        comm.recv(out, prv)
        comm.group_end()

    return {
        "all_reduce": lambda: comm.all_reduce(src, out, op=rc.RedOp.MAX),
        "all_gather": lambda: comm.all_gather(src[:block], gathered),
        "reduce_scatter": lambda: comm.reduce_scatter(src[: block * n], out[:block]),
        "broadcast": lambda: comm.broadcast(src, out, root=0),
        "all_to_all": lambda: comm.all_to_all(src[: block * n], gathered),
        "send_recv": ring,
    }


def _failing_rank(ctx, collective, victim, how, delay_s=0.2):
    import os
    import signal
    import threading
    import time

    import numpy as np

    import rcclx_core as rc

    def held():  # what a leak would leave: open fds and threads
        with open("/proc/self/status") as f:
            threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
        return len(os.listdir("/proc/self/fd")), threads

    def held_once_settled(limit, wait_s=2.0):
        # A leak stays; on rank 0 the thread of the unique id's store that served a departed
        # peer may still be closing its socket for a moment (long enough under a sanitizer).
        until = time.monotonic() + wait_s
        now = held()
        while (now[0] > limit[0] or now[1] > limit[1]) and time.monotonic() < until:
            time.sleep(0.05)
            now = held()
        return now

    store = ctx.store()
    store.set(f"failure/pid{ctx.rank}", str(os.getpid()).encode())
    # One communicator made and destroyed first: what a process keeps after its first one is
    # not a leak of the failure path.
    warm = rc.Communicator.from_store(store, ctx.rank, ctx.nranks, prefix="failure/warm")
    warm.destroy()
    # The unique id too: its store (a thread and a socket on rank 0) serves for the process's
    # life, whatever becomes of the communicators made from it.
    uid = ctx.unique_id()
    before = held()
    comm = rc.Communicator.from_unique_id(uid, ctx.rank, ctx.nranks)
    call = _calls(comm, np, rc)[collective]
    call()  # every rank is in the loop before the victim goes
    if ctx.rank == victim:
        sig = {"sigkill": signal.SIGKILL, "sigstop": signal.SIGSTOP}[how]

        def fault():
            store.set("failure/fault_at", repr(time.time()).encode())
            os.kill(os.getpid(), sig)

        threading.Timer(delay_s, fault).start()
    start = time.monotonic()
    outcome = None
    while time.monotonic() - start < 4 * TIMEOUT_MS / 1000:
        try:
            call()
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), isinstance(e, rc.RemoteError))
            break
    raised_at = time.time()
    survivors = [r for r in range(ctx.nranks) if r != victim]
    if ctx.rank == survivors[0] and how == "sigstop":  # the stopped rank is not needed any more
        os.kill(int(store.get(f"failure/pid{victim}")), signal.SIGKILL)
    t = time.monotonic()
    try:
        call()
        later = ("returned", "", 0.0)
    except rc.Error as e:
        later = (type(e).__name__, str(e), time.monotonic() - t)
    t = time.monotonic()
    comm.destroy()  # releases without waiting on the ranks that left
    destroy_s = time.monotonic() - t
    # The survivors go on together in a new communicator of the same processes.
    sub = rc.Communicator.from_store(
        store, survivors.index(ctx.rank), len(survivors), prefix="failure/again"
    )
    x = np.full(4, float(ctx.rank), np.float64)
    sub.all_reduce(x)
    sub.destroy()
    return {
        "fault_at": float(store.get("failure/fault_at")),
        "held": (before, held_once_settled(before)),
        "outcome": outcome,
        "raised_at": raised_at,
        "later": later,
        "destroy_s": destroy_s,
        "again": x.tolist(),
        "expect_again": float(sum(survivors)),
    }


COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "send_recv")
CASES = [(c, t, 3, "sigkill") for c in COLLECTIVES for t in ("shm", "tcp")]
CASES += [("all_reduce", t, 4, "sigkill") for t in ("shm", "tcp")]
CASES += [(c, "shm", 3, "sigstop") for c in ("all_reduce", "send_recv")]
CASES += [("all_reduce", "tcp", 3, "sigstop")]


@pytest.mark.parametrize(("collective", "transport", "nranks", "how"), CASES)
def test_a_failure_reaches_every_survivor(collective, transport, nranks, how):
    victim = nranks - 1  # rank 0 hosts the communicator's bootstrap store
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    segments = _rcclx_segments()
    results = launch(
        _failing_rank, nranks, collective, victim, how, env=env, expect_errors=True, timeout=60
    )
    figures = _assert_every_survivor_names(results, victim)
    _assert_no_segment_left(segments)
    _report((collective, transport, nranks, victim, how, 0.2), figures)


def _random_cases(seed: int, count: int) -> list[tuple]:
    """Faults drawn at random: collective, transport, 2 to 5 ranks, any rank as the victim (rank
    0 too, which hosts the unique id's store), SIGKILL or SIGSTOP, and when in the loop."""
    import random

    rng = random.Random(seed)
    cases = []
    for _ in range(count):
        nranks = rng.randint(2, 5)
        cases.append(
            (
                rng.choice(COLLECTIVES), rng.choice(("shm", "tcp")), nranks,
                rng.randrange(nranks), rng.choice(("sigkill", "sigstop")),
                round(rng.uniform(0.0, 0.5), 3),
            )
        )  # fmt: skip
    return cases


RANDOM_SEED = int(os.environ.get("RCCLX_FAULT_SEED", "20261201"))
RANDOM_CASES = _random_cases(RANDOM_SEED, int(os.environ.get("RCCLX_FAULT_CASES", "10")))


@pytest.mark.parametrize(("collective", "transport", "nranks", "victim", "how", "delay_s"),
                         RANDOM_CASES)  # fmt: skip
def test_a_fault_at_a_random_point_reaches_every_survivor(
    collective, transport, nranks, victim, how, delay_s
):
    # The cases come from RCCLX_FAULT_SEED (RCCLX_FAULT_CASES of them): another seed explores
    # other points; a failure's parameters are in its test id.
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    segments = _rcclx_segments()
    results = launch(
        _failing_rank, nranks, collective, victim, how, delay_s, env=env, expect_errors=True,
        timeout=60,
    )  # fmt: skip
    figures = _assert_every_survivor_names(results, victim)
    _assert_no_segment_left(segments)
    _report((collective, transport, nranks, victim, how, delay_s), figures)


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_a_rank_that_gives_up_first_does_not_blame_the_rank_it_waited_on(transport):
    # Rank 1's shorter timeout ends its wait on rank 0 first, while rank 0 still waits on the
    # stopped rank 2: the reports must still name rank 2, on rank 0 as on rank 1.
    victim = 2
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(
        _failing_rank, 3, "all_reduce", victim, "sigstop", env=env, expect_errors=True,
        timeout=60, rank_env=lambda r: {"RCCLX_TIMEOUT_MS": TIMEOUT_MS // 2} if r == 1 else {},
    )  # fmt: skip
    _assert_every_survivor_names(results, victim)


def _chain_of_receives_rank(ctx, late):
    """Rank r receives from rank r - 1; rank 0 never sends and never checks (as if stopped);
    rank `late` starts its receive 1.2 s after the others."""
    import time

    import numpy as np

    import rcclx_core as rc

    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    buf = np.zeros(16, np.float32)
    comm.all_reduce(buf)  # every rank is connected before the waits begin
    outcome = None
    if ctx.rank == 0:
        time.sleep(5.0)
    else:
        if ctx.rank == late:
            time.sleep(1.2)
        try:
            comm.recv(buf, ctx.rank - 1)
            outcome = ("returned", "")
        except rc.Error as e:
            outcome = (type(e).__name__, str(e))
    comm.destroy()
    return outcome


@pytest.mark.parametrize("late", [2, 1])
@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_a_rank_blamed_out_of_turn_answers_for_itself(transport, late):
    # Rank 3 gives up on rank 2 first (its timeout is 1 s); rank 2 answers that it waits on
    # rank 1; rank 1 must answer that it waits on rank 0, so every survivor's error ends the
    # chain at rank 0. Two moments at which rank 1 learns it is blamed used to end the chain at
    # rank 1 itself (it waited for its own answer, which only it could give, then named itself):
    # late=2: rank 1 is already waiting on rank 0, following rank 3's report, when rank 2's
    #   answer arrives blaming it;
    # late=1: rank 1 is between calls, not yet waiting on anyone, when it reads the blame.
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": 10_000}
    results = launch(
        _chain_of_receives_rank, 4, late, env=env, timeout=60,
        rank_env=lambda r: {"RCCLX_TIMEOUT_MS": 1000} if r == 3 else {},
    )  # fmt: skip
    # Each error is the chain as its rank read it; every one ends at rank 1's answer.
    for res in results[1:]:
        kind, message = res.value
        assert kind == "RemoteError", (res.rank, res.value)
        answer = "rank 1 reported: was waiting on rank 0 when"
        assert answer in message, f"rank {res.rank}: {message}"


def _blocked_sender_rank(ctx):
    """Rank 2 stops; rank 0 sends it 64 MiB in 32 MiB chunks (its socket fills, and the send
    blocks); rank 1 receives from rank 0 with a 1 s timeout and so blames rank 0."""
    import os
    import signal

    import numpy as np

    import rcclx_core as rc

    store = ctx.store()
    # Rank 1's short timeout is a hint, so it covers its receive but not the bootstrap: ranks
    # that start late on a loaded machine must not fail the set-up.
    hints = {"RCCLX_TIMEOUT_MS": "1000"} if ctx.rank == 1 else None
    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks, hints=hints)
    comm.all_reduce(np.zeros(16, np.float32))
    store.set(f"blocked/pid{ctx.rank}", str(os.getpid()).encode())
    if ctx.rank == 2:
        os.kill(os.getpid(), signal.SIGSTOP)
    try:
        if ctx.rank == 0:
            comm.send(np.ones(16 << 20, np.float32), 2)
        else:
            comm.recv(np.empty(16, np.float32), 0)
        outcome = ("returned", "")
    except rc.Error as e:
        outcome = (type(e).__name__, str(e))
    if ctx.rank == 0:
        os.kill(int(store.get("blocked/pid2")), signal.SIGKILL)
    comm.destroy()
    return outcome


def test_a_rank_blocked_sending_to_a_stopped_peer_answers_for_itself():
    # Over tcp a send to a peer that stopped reading blocks once the socket is full. The
    # sender must still see the group's reports while it is blocked: blamed by rank 1, it
    # answers that it waits on rank 2, so both survivors' errors end the chain at rank 2
    # (before, it learnt of nothing until its own 10 s send timeout, and rank 1 named it).
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_TIMEOUT_MS": 10_000, "RCCLX_P2P_CHUNK_BYTES": "32M"}
    results = launch(_blocked_sender_rank, 3, env=env, timeout=60, expect_errors=True)
    assert results[2].error_type == "Died", results[2]
    chain = "rank 0 reported: was waiting on rank 2 when rank 1 reported: timed out"
    for res in results[:2]:
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        kind, message = res.value
        assert kind == "RemoteError", (res.rank, res.value)
        assert message.startswith(chain), f"rank {res.rank}: {message}"


def _rcclx_segments() -> set[str]:
    return {n for n in os.listdir("/dev/shm") if n.startswith("rcclx-")}


def _assert_no_segment_left(before: set[str]) -> None:
    """Segments are unlinked once mapped, so a killed rank leaves none; one that appeared
    meanwhile and is still there a moment later is left over."""
    new = _rcclx_segments() - before
    if new:
        time.sleep(0.5)
        new &= _rcclx_segments()
    assert not new, f"left in /dev/shm: {sorted(new)}"


def _assert_every_survivor_names(results, victim):
    assert results[victim].error_type == "Died", results[victim]
    survivors = [res for res in results if res.rank != victim]
    for res in survivors:
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        assert res.value["outcome"] is not None, f"rank {res.rank} never raised"
        kind, message, is_remote = res.value["outcome"]
        assert is_remote, f"rank {res.rank}: {kind}: {message}"
        assert f"rank {victim}" in message, f"rank {res.rank}: {message}"
        later_kind, later_message, later_s = res.value["later"]
        assert later_kind in ("RemoteError", "TimeoutError") and f"rank {victim}" in later_message
        assert later_s < 0.1, f"rank {res.rank}: a call after the failure took {later_s:.3f} s"
        assert res.value["destroy_s"] < SPREAD_S, res.value
        assert res.value["again"] == [res.value["expect_again"]] * 4
        # Nothing the failure path opened is left. (Rank 0's count before may include peers'
        # connections to the unique id's store, which it hosts, still being served.)
        before, after = res.value["held"]
        grew = after[0] > before[0] or after[1] > before[1]
        assert not grew, f"rank {res.rank}: (fds, threads) {before} before, {after} after"
    times = [res.value["raised_at"] for res in survivors]
    spread = max(times) - min(times)
    assert spread < SPREAD_S, f"survivors raised {spread:.2f} s apart: {survivors}"
    return {"spread_s": spread, "last_raise_s": max(times) - survivors[0].value["fault_at"]}


def _report(case: tuple, figures: dict) -> None:
    """With RCCLX_FAULT_REPORT=path, one JSON line per fault: its case and figures."""
    path = os.environ.get("RCCLX_FAULT_REPORT")
    if path:
        import json

        with open(path, "a") as f:
            f.write(json.dumps({"case": list(case), **figures}) + "\n")
