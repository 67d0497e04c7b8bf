"""A peer killed mid-operation: survivors raise RemoteError naming it; /dev/shm stays clean."""

import re

import ctran_helpers
import pytest

from launcher import launch

TIMEOUT_MS = 3000


def _victim_rank(ctx, how, victim):
    import os
    import signal
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=2)
    group.bootstrap.barrier()
    if ctx.rank == victim:
        time.sleep(0.1)  # let the survivors start waiting
        if how == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        os._exit(3)
    start = time.monotonic()
    try:
        win.wait_signal(0, 1, from_peer=victim)
        outcome = ("returned", "")
    except ctran.Error as e:
        outcome = (type(e).__name__, str(e), isinstance(e, ctran.RemoteError))
    elapsed = time.monotonic() - start
    tag = group.job_tag
    after = []
    for call in (
        lambda: group.check_peer(victim),
        lambda: win.put(victim, 0, b"x"),
        lambda: win.signal(victim, 0),
    ):
        try:
            call()
            after.append(("ok", ""))
        except ctran.Error as e:
            after.append((type(e).__name__, str(e)))
    # The survivors can still clean up their side.
    win.destroy()
    group.destroy()
    return {"outcome": outcome, "elapsed": elapsed, "job_tag": tag, "after": after}


CASES = [(n, t, "sigkill") for n in (2, 3, 4) for t in ("shm", "tcp")]
CASES += [(3, t, "exit") for t in ("shm", "tcp")]


@pytest.mark.parametrize(("nranks", "transport", "how"), CASES)
def test_dead_peer_is_reported(nranks, transport, how):
    # SIGKILL takes the last rank; os._exit takes rank 0, which hosts the bootstrap store.
    victim = nranks - 1 if how == "sigkill" else 0
    before = ctran_helpers.rcclx_shm_files()
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_victim_rank, nranks, how, victim, env=env, expect_errors=True, timeout=30)
    assert results[victim].error_type == "Died"
    assert results[victim].exitcode == (-9 if how == "sigkill" else 3)
    tags = set()
    for res in results:
        if res.rank == victim:
            continue
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        kind, message, is_remote = res.value["outcome"]
        assert is_remote, f"rank {res.rank}: {kind}: {message}"
        assert f"rank {victim}" in message
        # Detected from the peer's death, not by running into the deadline.
        assert res.value["elapsed"] < TIMEOUT_MS / 1000 * 0.8, res.value
        tags.add(res.value["job_tag"])
        # Once the death is known, checking the peer fails, and over tcp so do put and signal
        # (over shm they store into memory the dead process shared, which is harmless).
        checked, put, signalled = res.value["after"]
        assert checked[0] == "RemoteError" and f"rank {victim}" in checked[1], checked
        if transport == "tcp":
            for kind, message in (put, signalled):
                assert kind == "RemoteError" and f"rank {victim}" in message, (kind, message)
    assert len(tags) == 1
    (tag,) = tags
    leftovers = ctran_helpers.leftover_shm_files(before)
    assert not leftovers
    assert not [name for name in ctran_helpers.rcclx_shm_files() if tag in name]


def _missing_rank(ctx, missing):
    import time

    import ctran

    uid = ctx.unique_id()
    if ctx.rank == missing:
        return None  # never joins
    start = time.monotonic()
    try:
        ctran.PeerGroup.from_unique_id(uid, ctx.rank, ctx.nranks)
        outcome = ("joined", "")
    except ctran.Error as e:
        outcome = (type(e).__name__, str(e))
    return (*outcome, time.monotonic() - start)


@pytest.mark.parametrize("missing", [1, 2])
def test_a_rank_that_never_joins_times_out_naming_it(missing):
    """Whichever gives up first, rank 0 (which hosts the store) or another rank, every rank that
    joined gets a TimeoutError naming the missing rank and the knob."""
    results = launch(_missing_rank, 3, missing, env={"RCCLX_TIMEOUT_MS": 500}, timeout=30)
    for rank, res in enumerate(results):
        if rank == missing:
            continue
        kind, message, elapsed = res.value
        assert kind == "TimeoutError", message
        assert f"rank {missing}" in message and "RCCLX_TIMEOUT_MS=500" in message
        assert elapsed < 5
        if rank == 0:
            assert elapsed > 0.4


def _told_by_the_store_host(ctx):
    import time

    import ctran

    uid = ctx.unique_id()
    if ctx.rank == 2:
        return None  # never joins
    boot = ctran.Bootstrap.from_unique_id(uid, ctx.rank, ctx.nranks)
    if ctx.rank == 1:
        time.sleep(0.6)  # rank 0, which hosts the store, will give up well before this rank
    start = time.monotonic()
    try:
        boot.all_gather(b"x")
        outcome = ("returned", "")
    except ctran.Error as e:
        outcome = (type(e).__name__, str(e))
    del boot  # rank 0 gives up on the group: its store closes
    return (*outcome, time.monotonic() - start)


def test_the_store_host_giving_up_first_tells_the_ranks_still_waiting_why():
    results = launch(_told_by_the_store_host, 3, env={"RCCLX_TIMEOUT_MS": 1000}, timeout=30)
    kind, message, _ = results[0].value
    assert kind == "TimeoutError", message
    assert "store key 'ag/0/2'" in message
    kind, message, elapsed = results[1].value
    assert kind == "TimeoutError", message
    store = r"[0-9.]+:[0-9]+"
    assert re.fullmatch(
        f"bootstrap allgather: rank 2 did not arrive: store server {store}: its host gave up "
        "first and closed it: bootstrap allgather: rank 2 did not arrive: timed out after 1000 "
        f"ms waiting for store key 'ag/0/2' at {store} \\(RCCLX_TIMEOUT_MS=1000\\)",
        message,
    ), message
    assert elapsed < 0.9  # told when rank 0 gave up, before its own deadline


def _last_signal_then_leave(ctx, how):
    import os
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=2)
    group.bootstrap.barrier()
    if ctx.rank == 1:
        win.signal(0, 0)
        if how == "exit":
            os._exit(0)  # its process is gone: no word of its departure reaches the waiter
        win.destroy()
        group.destroy()  # over tcp: it says so on each connection before closing it
        return None
    win.wait_signal(0, 1, from_peer=1)
    # The peer is seen gone once the transport notices; until then check_peer passes without
    # asking. Asked, delivered() says the signal arrived: no failure.
    asked = []

    def delivered():
        asked.append(time.monotonic())
        return win.read_signal(0) >= 1

    deadline = time.monotonic() + 10
    while not asked and time.monotonic() < deadline:
        group.check_peer(1, delivered=delivered)
        time.sleep(0.01)
    group.check_failed()  # raises if the departure was reported as a failure
    try:
        group.check_peer(1)
        without = ("returned", "")
    except ctran.RemoteError as e:
        without = ("RemoteError", str(e))
    win.destroy()
    group.destroy()
    return {"asked": len(asked), "without": without}


def _skip_without(transport):
    """Skips a ucx case where this environment has no UCX library."""
    if transport != "ucx":
        return
    import ctran

    loaded, missing = ctran.ucx_library()
    if not loaded:
        pytest.skip(missing)


@pytest.mark.parametrize(
    ("transport", "how"),
    [("tcp", "destroy"), ("ucx", "destroy"), ("tcp", "exit"), ("shm", "exit")],
)
def test_a_peer_that_leaves_after_its_last_signal_is_no_failure(transport, how):
    # A peer may signal for the last time and leave before this rank's wait looks at it: the
    # waiter, finding it gone, asks whether what it awaited arrived before reporting a failure
    # to every rank (which would fail the group's orderly end on all of them).
    _skip_without(transport)
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_last_signal_then_leave, 2, how, env=env, expect_errors=how == "exit")
    res = results[0]
    assert res.ok, f"{res.error_type}: {res.error}\n{res.traceback}"
    assert res.value["asked"] >= 1, "the peer was never seen gone"
    kind, message = res.value["without"]
    if how == "destroy":
        # An orderly departure is no failure even to a caller that waits on nothing.
        assert kind == "returned", res.value
    else:
        # A process that vanished is one, once nobody waits for something that arrived.
        assert kind == "RemoteError" and "rank 1" in message, res.value


def _late_traffic_to_a_peer_that_left(ctx):
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(1 << 16, num_signals=1)
    group.bootstrap.barrier()
    if ctx.rank == 1:
        win.destroy()
        group.destroy()
        return None
    # Rank 1 leaves while rank 0 still sends to it (a collective's last credits, say): those
    # messages have no reader any more, and dropping them is no failure.
    # Sending for a second makes sure most of it goes after rank 1 is gone.
    import time

    payload = bytes(4096)
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        win.put(1, 0, payload)
        win.signal(1, 0)
        time.sleep(0.001)
    group.check_failed()
    win.destroy()
    group.destroy()
    return "ok"


@pytest.mark.parametrize("transport", ["tcp", "ucx"])
def test_sends_to_a_peer_that_destroyed_its_group_are_no_failure(transport):
    _skip_without(transport)
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    results = launch(_late_traffic_to_a_peer_that_left, 2, env=env)
    assert results[0].value == "ok"


def _wait_on_a_peer_that_left_without_sending(ctx):
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=1)
    group.bootstrap.barrier()
    if ctx.rank == 1:
        win.destroy()
        group.destroy()
        return None
    return _timed_wait(win, from_peer=1)


@pytest.mark.parametrize("transport", ["tcp", "ucx"])
def test_a_wait_on_a_peer_that_destroyed_its_group_raises_at_once(transport):
    # Mismatched calls: rank 0 waits for a signal rank 1 never sends, and rank 1 ends. The wait
    # must not run to its timeout: the departure tells rank 0 nothing more will come.
    _skip_without(transport)
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": 20000}
    results = launch(_wait_on_a_peer_that_left_without_sending, 2, env=env, timeout=60)
    (kind, message), elapsed = results[0].value
    assert kind == "RemoteError", message
    assert "rank 1 destroyed its communicator" in message
    assert elapsed < 10, elapsed


def _timed_wait(win, from_peer):
    """Waits for signal 0 of `win` to reach 1 from `from_peer`; returns how it ended (kind and
    message of the error, or "returned") and the seconds it took."""
    import time

    import ctran

    start = time.monotonic()
    try:
        win.wait_signal(0, 1, from_peer=from_peer)
        outcome = ("returned", "")
    except ctran.Error as e:
        outcome = (type(e).__name__, str(e))
    return outcome, time.monotonic() - start


def _stream_puts_in_background(win, peer):
    """Puts 64 MiB messages into `peer`'s window from a daemon thread until a put raises."""
    import threading

    import ctran

    def stream():
        payload = bytes(64 << 20)
        try:
            while True:
                win.put(peer, 0, payload)
        except ctran.Error:
            pass

    threading.Thread(target=stream, daemon=True).start()


def _stopped_mid_put_rank(ctx):
    """Rank 2 puts 64 MiB messages into rank 0's window without pause and stops itself 50 ms
    in, so its connection to rank 0 ends in the middle of a message; rank 3 dies 0.3 s in.
    Rank 0 waits on rank 2, rank 1 on rank 3 (which it finds dead and reports to every rank)."""
    import os
    import signal
    import threading
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(64 << 20, num_signals=1)
    store = ctx.store()
    store.set(f"midput/pid{ctx.rank}", str(os.getpid()).encode())
    group.bootstrap.barrier()
    if ctx.rank == 2:
        payload = bytes(64 << 20)
        threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGSTOP)).start()
        while True:
            win.put(0, 0, payload)
    if ctx.rank == 3:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    outcome, waited = _timed_wait(win, from_peer=2 if ctx.rank == 0 else 3)
    if ctx.rank == 0:  # release the stopped rank 2
        os.kill(int(store.get("midput/pid2")), signal.SIGKILL)
    return {"outcome": outcome, "waited_s": waited}


def test_a_peer_stopped_mid_message_does_not_hold_up_the_others_reports():
    # Over tcp one progress thread receives every peer's messages. Were it to wait for the rest
    # of rank 2's put, rank 1's report of rank 3's death would never reach rank 0, which would
    # raise only at its own 10 s timeout, naming rank 2.
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_TIMEOUT_MS": 10_000}
    results = launch(_stopped_mid_put_rank, 4, env=env, expect_errors=True, timeout=60)
    assert results[2].error_type == "Died" and results[3].error_type == "Died", results[2:]
    zero, one = results[0].value, results[1].value
    assert one["outcome"][0] == "RemoteError" and "rank 3" in one["outcome"][1], one
    assert zero["outcome"][0] == "RemoteError" and "rank 3" in zero["outcome"][1], zero
    assert zero["waited_s"] < 2.0, (
        f"rank 0 raised {zero['waited_s']:.1f} s into its wait: {zero['outcome'][1]}"
    )


def _report_past_a_stopped_reader_rank(ctx):
    """Rank 0 streams puts to rank 1 from a thread until rank 1 stops itself and rank 0's
    socket to it is full; rank 3 dies 0.5 s in. Rank 0 (waiting on rank 3) detects the death
    and reports it to ranks 1 and 2; rank 2 waits on rank 0, so it learns of it only from that
    report. Rank 0 keeps its group open until rank 2 is done."""
    import os
    import signal
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(64 << 20, num_signals=1)
    store = ctx.store()
    store.set(f"stopped/pid{ctx.rank}", str(os.getpid()).encode())
    group.bootstrap.barrier()
    if ctx.rank == 1:
        time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGSTOP)
    if ctx.rank == 3:
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGKILL)
    if ctx.rank == 0:
        _stream_puts_in_background(win, 1)
    outcome, waited = _timed_wait(win, from_peer=3 if ctx.rank == 0 else 0)
    if ctx.rank == 2:
        store.set("stopped/done2", b"1")
    if ctx.rank == 0:
        store.get("stopped/done2", timeout_ms=30_000)
        os.kill(int(store.get("stopped/pid1")), signal.SIGKILL)
    return {"outcome": outcome, "waited_s": waited}


def test_a_failure_report_does_not_wait_on_a_peer_that_stopped_reading():
    # The rank that detects a failure tells every peer before it raises. A peer stopped with
    # this rank's socket to it full would take the whole send timeout (10 s here) to refuse the
    # report: the detector's own error and the reports to the peers after it would wait as long.
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_TIMEOUT_MS": 10_000}
    results = launch(_report_past_a_stopped_reader_rank, 4, env=env, expect_errors=True, timeout=60)
    assert results[1].error_type == "Died" and results[3].error_type == "Died", results[1::2]
    for rank in (0, 2):
        r = results[rank].value
        assert r["outcome"][0] == "RemoteError" and "rank 3" in r["outcome"][1], (rank, r)
        assert r["waited_s"] < 2.0, (rank, f"{r['waited_s']:.1f} s", r["outcome"][1])


def _report_behind_a_busy_sender_rank(ctx):
    """Rank 1 streams 64 MiB puts to rank 2 from a thread; rank 2 stops itself 0.1 s in, so
    that thread is stalled in the middle of a message when rank 1, waiting on rank 0, finds rank
    0 dead (0.3 s in). Another thread of rank 1 continues rank 2 50 ms after rank 1 reported:
    by then the sending thread's stall check has seen the report. Rank 2 waits on rank 1: it
    learns of the death only from rank 1's report, which has to follow the message being sent."""
    import os
    import signal
    import threading
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(64 << 20, num_signals=1)
    store = ctx.store()
    store.set(f"busy/pid{ctx.rank}", str(os.getpid()).encode())
    group.bootstrap.barrier()
    if ctx.rank == 0:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    if ctx.rank == 1:
        pid2 = int(store.get("busy/pid2"))  # the store's client is not for two threads at once

        def continue_rank_2_once_reported():
            try:
                while True:
                    group.check_failed()
                    time.sleep(0.001)
            except ctran.Error:
                time.sleep(0.05)
            finally:
                os.kill(pid2, signal.SIGCONT)

        _stream_puts_in_background(win, 2)
        threading.Thread(target=continue_rank_2_once_reported, daemon=True).start()
    if ctx.rank == 2:
        threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGSTOP)).start()
    outcome, waited = _timed_wait(win, from_peer=ctx.rank - 1)
    if ctx.rank == 2:
        store.set("busy/done2", b"1")
    else:  # rank 2 has its answer before rank 1 leaves
        store.get("busy/done2", timeout_ms=30_000)
    return {"outcome": outcome, "waited_s": waited}


def test_a_report_follows_the_message_its_connection_was_sending():
    # Were rank 1's sending thread to give up its message half sent once it sees the failure,
    # nothing more could follow on that connection: rank 2 would hear nothing, and raise at its
    # own 10 s timeout naming rank 1.
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_TIMEOUT_MS": 10_000}
    results = launch(_report_behind_a_busy_sender_rank, 3, env=env, expect_errors=True, timeout=60)
    assert results[0].error_type == "Died", results[0]
    for rank in (1, 2):
        r = results[rank].value
        assert r["outcome"][0] == "RemoteError" and "rank 0" in r["outcome"][1], (rank, r)
        assert r["waited_s"] < 2.0, (rank, f"{r['waited_s']:.1f} s", r["outcome"][1])


def _put_to_a_dead_peer_rank(ctx):
    """Rank 2 dies; rank 1, which never waits on it, puts to it 0.5 s later (its connection is
    known closed by then); rank 0 waits on rank 1."""
    import os
    import signal
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(4096, num_signals=1)
    group.bootstrap.barrier()
    if ctx.rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    if ctx.rank == 1:
        time.sleep(0.5)
        try:
            win.put(2, 0, b"x" * 64)
            return {"outcome": ("returned", ""), "waited_s": 0.0}
        except ctran.Error as e:
            return {"outcome": (type(e).__name__, str(e)), "waited_s": 0.0}
        finally:
            ctx.store().get("put/done0", timeout_ms=30_000)
    outcome, waited = _timed_wait(win, from_peer=1)
    ctx.store().set("put/done0", b"1")
    return {"outcome": outcome, "waited_s": waited}


def test_a_put_to_a_dead_peer_is_reported_to_every_rank():
    # The put fails on the transport's connection; were that error raised as it is, no rank
    # would hear of it, and rank 0 would time out on rank 1 (10 s), naming it.
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_TIMEOUT_MS": 10_000}
    results = launch(_put_to_a_dead_peer_rank, 3, env=env, expect_errors=True, timeout=60)
    assert results[2].error_type == "Died", results[2]
    one, zero = results[1].value, results[0].value
    assert one["outcome"][0] == "RemoteError" and "rank 2" in one["outcome"][1], one
    assert zero["outcome"][0] == "RemoteError" and "rank 2 failed" in zero["outcome"][1], zero
    assert zero["waited_s"] < 2.0, zero
