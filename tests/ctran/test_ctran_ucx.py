"""The ucx transport: windows over UCX between processes forced onto it (RCCLX_TRANSPORT=ucx) or
on pretend hosts, large and unaligned puts, many signals, a killed peer, nothing left behind
after destroy, and the errors when libucp cannot be loaded.

Tests that need a working UCX skip, with the reason, when ctran cannot load libucp.so.0 (the
libucx-cu12 wheel that `nox -s tests` installs, or the system's libucx0).
"""

import os

import ctran_helpers
import pytest
from ctran_helpers import needs_ucx, ucx_library

import ctran
from launcher import launch, pretend_hosts, values


def _has_rdma_device() -> bool:
    """What the transport choice looks at: an InfiniBand, RoCE or EFA device on this host."""
    root = "/sys/class/infiniband"
    return os.path.isdir(root) and bool(os.listdir(root))


# Debian's libucx0 (UCX 1.13): the oldest UCX the transport supports, where present.
SYSTEM_UCP = "/usr/lib/x86_64-linux-gnu/libucp.so.0"

FORCED = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}


def _window_rank(ctx):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    kinds = [group.transport_to(p) for p in range(ctx.nranks)]
    problems = ctran_helpers.exercise_window(group)
    group.destroy()
    return kinds, problems


@needs_ucx
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_window_put_signal_wait_forced_onto_ucx(nranks):
    before = ctran_helpers.rcclx_shm_files()
    for rank, (kinds, problems) in enumerate(values(launch(_window_rank, nranks, env=FORCED))):
        assert problems == [], f"rank {rank}: {problems}"
        assert kinds == ["self" if p == rank else "ucx" for p in range(nranks)]
    assert not ctran_helpers.leftover_shm_files(before)


@needs_ucx
@pytest.mark.skipif(not os.path.exists(SYSTEM_UCP), reason=f"no UCX 1.13 at {SYSTEM_UCP}")
def test_window_on_the_oldest_supported_ucx():
    env = {**FORCED, "RCCLX_UCX_LIBRARY": SYSTEM_UCP}
    for rank, (kinds, problems) in enumerate(values(launch(_window_rank, 3, env=env))):
        assert problems == [], f"rank {rank}: {problems}"
        assert kinds.count("ucx") == 2


@needs_ucx
def test_pretend_hosts_use_ucx_between_and_shm_within():
    # 4 ranks, 2 per pretend host: auto picks ucx across hosts where every rank loads it and
    # has an RDMA device; else tcp.
    env = {"RCCLX_TIMEOUT_MS": 20000, "RCCLX_NET_TRANSPORT": "auto"}
    across = "ucx" if _has_rdma_device() else "tcp"
    results = values(launch(_window_rank, 4, env=env, rank_env=pretend_hosts(ranks_per_host=2)))
    for rank, (kinds, problems) in enumerate(results):
        assert problems == [], f"rank {rank}: {problems}"
        want = ["self" if p == rank else "shm" if p // 2 == rank // 2 else across for p in range(4)]
        assert kinds == want


def _rounds_of_puts_rank(ctx, rounds):
    """Each round: this rank's puts [(offset, nbytes), ...] to the other rank, then one signal;
    returns the (round, offset, nbytes) whose bytes did not arrive as sent."""
    import numpy as np

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    peer = 1 - ctx.rank
    total = max(off + n for puts in rounds for off, n in puts)
    win = group.create_window(total, num_signals=2)
    mine = np.frombuffer(win.buffer, dtype=np.uint8)
    wrong = []
    for k, puts in enumerate(rounds):
        # Both ranks draw the same bytes: the sender's, for peer `ctx.rank` this round.
        rng = np.random.default_rng(k)
        payloads = [[rng.integers(0, 256, n, dtype=np.uint8) for _, n in puts] for _ in range(2)]
        for (offset, _), data in zip(puts, payloads[ctx.rank]):
            win.put(peer, offset, data)
            data[:] = 0  # the source is reusable once put returns, carried or not
        win.signal(peer, 0)
        win.wait_signal(0, k + 1, from_peer=peer)
        for (offset, n), want in zip(puts, payloads[peer]):
            if not np.array_equal(mine[offset : offset + n], want):
                wrong.append((k, offset, n))
        win.signal(peer, 1)  # this round's bytes are checked: the peer may overwrite them
        win.wait_signal(1, k + 1, from_peer=peer)
    win.destroy()
    group.destroy()
    return wrong


@needs_ucx
def test_large_and_unaligned_puts():
    cases = [(0, 1), (3, 5), (7, 4093), (1, 1_000_003), (4096, 16 << 20), (13, (48 << 20) + 5)]
    rounds = [[case] for case in cases]
    results = values(launch(_rounds_of_puts_rank, 2, rounds, env=FORCED, timeout=120))
    assert results == [[], []]


def _many_signals_rank(ctx, count):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=4)
    # Every rank signals slot 0 of every other rank `count` times, and slot 1 once with a delta.
    for _ in range(count):
        for peer in range(ctx.nranks):
            if peer != ctx.rank:
                win.signal(peer, 0)
    for peer in range(ctx.nranks):
        if peer != ctx.rank:
            win.signal(peer, 1, 1000 + ctx.rank)
    want0 = count * (ctx.nranks - 1)
    want1 = sum(1000 + r for r in range(ctx.nranks) if r != ctx.rank)
    got0 = win.wait_signal(0, want0)
    got1 = win.wait_signal(1, want1)
    group.bootstrap.barrier()  # every signal has landed everywhere: none may still arrive
    got = (got0, got1, win.read_signal(0), win.read_signal(1))
    win.destroy()
    group.destroy()
    return got, (want0, want0, want1, want1)


@needs_ucx
def test_many_signals_from_every_rank_add_up_exactly():
    for (got0, got1, read0, read1), (w0, _, w1, _) in values(
        launch(_many_signals_rank, 4, 2000, env=FORCED, timeout=120)
    ):
        assert (got0, read0, got1, read1) == (w0, w0, w1, w1)


TIMEOUT_MS = 4000


def _killed_peer_rank(ctx, victim):
    import signal
    import time

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=2)
    group.bootstrap.barrier()
    if ctx.rank == victim:
        time.sleep(0.2)  # let the survivors start waiting
        os.kill(os.getpid(), signal.SIGKILL)
    # Rank 0 waits on the victim itself; the others on rank 0, which is alive but stuck: they
    # learn of the death from rank 0's report, not from their own timeout.
    waits_on = victim if ctx.rank == 0 else 0
    start = time.monotonic()
    try:
        win.wait_signal(0, 1, from_peer=waits_on)
        outcome = ("returned", "", False)
    except ctran.Error as e:
        outcome = (type(e).__name__, str(e), isinstance(e, ctran.RemoteError))
    elapsed = time.monotonic() - start
    after = []
    for call in (lambda: win.put(victim, 0, b"x"), lambda: win.signal(victim, 0)):
        try:
            call()
            after.append(("ok", ""))
        except ctran.Error as e:
            after.append((type(e).__name__, str(e)))
    win.destroy()
    group.destroy()
    return {"outcome": outcome, "elapsed": elapsed, "after": after}


@needs_ucx
@pytest.mark.parametrize("nranks", [2, 3])
def test_killed_peer_is_a_remote_error_naming_it(nranks):
    victim = nranks - 1
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_killed_peer_rank, nranks, victim, env=env, expect_errors=True, timeout=60)
    assert results[victim].exitcode == -9
    for res in results[:victim]:
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        kind, message, is_remote = res.value["outcome"]
        assert is_remote and kind != "TimeoutError", f"rank {res.rank}: {kind}: {message}"
        assert f"rank {victim}" in message, message
        assert res.value["elapsed"] < TIMEOUT_MS / 1000 * 0.8, res.value
        for kind, message in res.value["after"]:
            assert kind == "RemoteError" and f"rank {victim}" in message, (kind, message)


def _lifecycle_rank(ctx, rounds):
    def count(path):
        return len(os.listdir(path))

    seen = []
    for k in range(rounds):
        group = ctran.PeerGroup.from_store(ctx.store(), ctx.rank, ctx.nranks, prefix=f"round{k}/")
        problems = ctran_helpers.exercise_window(group, rounds=10, seq_signals=20)
        assert problems == [], problems
        group.destroy()
        ctx.barrier(f"round{k}")
        seen.append((count("/proc/self/fd"), count("/proc/self/task")))
    return seen


@needs_ucx
def test_no_fd_or_thread_growth_after_destroy():
    for rank, seen in enumerate(values(launch(_lifecycle_rank, 2, 5, env=FORCED, timeout=120))):
        # The first round may leave UCX's process-wide state (its async thread, its logging);
        # every later group must give back all it took.
        assert len(set(seen[1:])) == 1, f"rank {rank}: (fds, threads) per round {seen}"
        fds, threads = seen[-1]
        assert threads <= seen[0][1], f"rank {rank}: {seen}"


def _choice_rank(ctx):
    try:
        group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    except ctran.Error as e:
        return (type(e).__name__, str(e))
    kinds = [group.transport_to(p) for p in range(ctx.nranks)]
    group.destroy()
    return ("ok", kinds)


def test_forced_ucx_with_a_bogus_library_says_what_was_looked_for():
    bogus = "/nonexistent/ucx/lib/libucp.so.0"
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_UCX_LIBRARY": bogus, "RCCLX_TIMEOUT_MS": 10000}
    for kind, message in values(launch(_choice_rank, 2, env=env, timeout=60)):
        assert kind == "InvalidUsageError", message
        assert "RCCLX_TRANSPORT=ucx" in message and "cannot use the ucx transport" in message
        if "without UCX headers" not in message:  # a build with the transport
            assert f"RCCLX_UCX_LIBRARY={bogus}" in message and "libucp.so.0" in message, message
            assert "No such file" in message, message


def test_auto_falls_back_to_tcp_between_hosts_when_ucx_does_not_load():
    env = {"RCCLX_UCX_LIBRARY": "/nonexistent/libucp.so.0", "RCCLX_NET_TRANSPORT": "auto"}
    results = values(launch(_choice_rank, 2, env=env, rank_env=pretend_hosts()))
    assert results == [("ok", ["self", "tcp"]), ("ok", ["tcp", "self"])]


@needs_ucx
def test_required_net_ucx_fails_on_every_rank_when_one_rank_lacks_it():
    # Only rank 1 points at a bogus library: the choice is the group's, so rank 0 fails too,
    # naming rank 1 (instead of hanging in a connection rank 1 never makes).
    own_host = pretend_hosts()
    results = values(
        launch(
            _choice_rank,
            2,
            env={"RCCLX_NET_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 10000},
            rank_env=lambda r: {
                **own_host(r),
                **({"RCCLX_UCX_LIBRARY": "/nonexistent/libucp.so.0"} if r == 1 else {}),
            },
        )
    )
    for kind, message in results:
        assert kind == "InvalidUsageError", message
        assert "RCCLX_NET_TRANSPORT=ucx: rank 1 cannot use the ucx transport" in message, message


def test_ucx_library_reports_one_of_library_or_reason():
    loaded, missing = ucx_library()
    assert bool(loaded) != bool(missing), (loaded, missing)
    if loaded:
        assert loaded.startswith("UCX 1.") and "libucp.so" in loaded, loaded


def _log_of_a_group(ctx):
    """What this rank's ctran printed (stderr) while making and destroying a group."""
    import tempfile

    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks).destroy()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        return log.read().decode(errors="replace")


@needs_ucx
def test_ucx_accepts_the_options_ctran_sets():
    # ctran sets UCX's keepalive and its tcp transport's segment size (RCCLX_UCX_KEEPALIVE_MS,
    # RCCLX_UCX_TCP_SEG_BYTES); an option this UCX does not know is logged at INFO, not raised.
    env = {**FORCED, "RCCLX_DEBUG": "INFO"}
    for rank, text in enumerate(values(launch(_log_of_a_group, 2, env=env))):
        assert "ucx" in text, f"rank {rank} logged nothing about its transport:\n{text}"
        assert "could not set" not in text, f"rank {rank}:\n{text}"


@needs_ucx
def test_small_and_large_puts_before_one_signal_all_land():
    # A put of up to 8 KiB travels in the next signal's message; a second put before that
    # signal sends the waiting one on its own first. Each round's puts, then one signal.
    cases = [
        [(0, 100)],
        [(0, 8192)],
        [(0, 8193)],
        [(0, 100), (8192, 8192), (20000, 8193), (40000, 10)],
        [(3, 1), (5, 1), (7, 1)],
        [(1000, 40000), (0, 5)],
    ]
    assert values(launch(_rounds_of_puts_rank, 2, cases, env=FORCED, timeout=120)) == [[], []]
