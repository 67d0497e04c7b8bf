"""Bad input gives clear, typed errors naming the argument and value, never a crash or a hang."""

import time

import numpy as np
import pytest

import ctran
from launcher import launch


@pytest.fixture
def group():
    """A one-rank group: every argument check runs without other processes."""
    g = ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1)
    yield g
    if not g.destroyed:
        g.destroy()


# --- joining ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("rank", "nranks"), [(2, 2), (-1, 2), (0, 0)])
def test_rank_out_of_range(rank, nranks):
    for join in (ctran.Bootstrap.from_store, ctran.PeerGroup.from_store):
        with pytest.raises(ctran.InvalidArgumentError) as info:
            join(ctran.MemoryStore(), rank, nranks)
        assert f"rank {rank}" in str(info.value) or f"nranks {nranks}" in str(info.value)
        assert str(nranks) in str(info.value)


def test_rank_out_of_range_by_unique_id():
    with pytest.raises(ctran.InvalidArgumentError, match=r"rank 5 is out of range for nranks 2"):
        ctran.Bootstrap.from_unique_id(ctran.create_unique_id(), 5, 2)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"RANK": "3", "WORLD_SIZE": "2"}, "RANK=3"),
        ({"RANK": "0", "WORLD_SIZE": "0"}, "WORLD_SIZE=0"),
        ({"RANK": "x", "WORLD_SIZE": "2"}, "RANK='x'"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_PORT": "port"}, "MASTER_PORT='port'"),
        ({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": ""}, "MASTER_ADDR"),
        ({"WORLD_SIZE": "2"}, "RANK"),
    ],
)
def test_bad_bootstrap_environment(monkeypatch, env, named):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    monkeypatch.delenv("RANK", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ctran.InvalidArgumentError) as info:
        ctran.Bootstrap.from_env()
    assert named in str(info.value)


def test_malformed_unique_id():
    good = ctran.create_unique_id()
    with pytest.raises(ctran.InvalidArgumentError, match="128 bytes, got 10"):
        ctran.Bootstrap.from_unique_id(b"x" * 10, 0, 1)
    with pytest.raises(ctran.InvalidArgumentError, match="128 bytes, got 129"):
        ctran.PeerGroup.from_unique_id(good + b"\0", 0, 1)
    with pytest.raises(ctran.InvalidArgumentError, match="magic"):
        ctran.Bootstrap.from_unique_id(b"\0" * 128, 0, 1)
    with pytest.raises(ctran.InvalidArgumentError, match="magic"):
        ctran.describe_unique_id(b"NCCLID01" + good[8:])
    no_port = good[:8] + b"\0\0\0\0" + good[12:]
    with pytest.raises(ctran.InvalidArgumentError, match="corrupt"):
        ctran.PeerGroup.from_unique_id(no_port, 0, 1)
    # The error is also a ValueError for Python callers.
    with pytest.raises(ValueError):
        ctran.describe_unique_id(b"")


def test_store_without_store_methods():
    with pytest.raises(ctran.InvalidArgumentError, match="'set'.*Store-like"):
        ctran.Bootstrap.from_store(object(), 0, 1)


def _same_rank_twice(ctx):
    import ctran

    claimed = [0, 1, 1][ctx.rank]  # processes 1 and 2 both claim rank 1
    boot = ctran.Bootstrap.from_store(ctx.store(), claimed, 2, prefix="dup")
    return boot.all_gather(b"%d" % claimed)


def test_two_processes_with_the_same_rank():
    results = launch(
        _same_rank_twice, 3, env={"RCCLX_TIMEOUT_MS": 10000}, expect_errors=True, timeout=30
    )
    assert results[0].ok and results[0].value == [b"0", b"1"]
    losers = [res for res in results[1:] if not res.ok]
    winners = [res for res in results[1:] if res.ok]
    assert len(losers) == 1 and len(winners) == 1
    assert winners[0].value == [b"0", b"1"]
    assert losers[0].error_type == "InvalidUsageError"
    assert "rank 1 joined twice" in losers[0].error


def _nranks_mismatch(ctx):
    import time

    import ctran

    declared = ctx.nranks + 1 if ctx.rank == ctx.nranks - 1 else ctx.nranks
    start = time.monotonic()
    try:
        ctran.PeerGroup.from_store(ctx.store(), ctx.rank, declared, prefix="mismatch")
    except ctran.Error as e:
        return type(e).__name__, str(e), time.monotonic() - start
    return "joined", "", time.monotonic() - start


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_nranks_mismatch_errors_instead_of_hanging(nranks):
    results = launch(_nranks_mismatch, nranks, env={"RCCLX_TIMEOUT_MS": 500}, timeout=30)
    odd = nranks - 1
    for rank, res in enumerate(results):
        kind, message, elapsed = res.value
        assert elapsed < 5
        if rank == odd or nranks == 2:
            # The ranks that compare declared sizes with the odd one out say so.
            assert kind == "InvalidArgumentError", message
            assert f"nranks {nranks + 1}" in message and f"nranks {nranks}" in message
        else:
            # The others find out when it never arrives.
            assert kind == "TimeoutError", message
            assert f"rank {odd}" in message


# --- windows ---------------------------------------------------------------------------------


def _window_mismatch(ctx):
    import numpy as np

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    nbytes = 8192 if ctx.rank == ctx.nranks - 1 else 4096
    try:
        group.create_window(nbytes)
        mismatch = ("created", "")
    except ctran.Error as e:
        mismatch = (type(e).__name__, str(e))
    # The failed creation leaves the group usable.
    win = group.create_window(4096, num_signals=1)
    nxt, prv = (ctx.rank + 1) % ctx.nranks, (ctx.rank - 1) % ctx.nranks
    try:
        win.put(nxt, 4090, b"12345678")
        beyond = ("put", "")
    except ctran.Error as e:
        beyond = (type(e).__name__, str(e))
    win.put(nxt, 4088, np.array([77 + ctx.rank], dtype=np.int64))
    win.signal(nxt, 0)
    win.wait_signal(0, 1, from_peer=prv)
    last = int(np.frombuffer(win.buffer, dtype=np.int64)[-1])
    group.bootstrap.barrier()
    return mismatch, beyond, last


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_window_size_mismatch_and_put_beyond_the_end(transport):
    nranks = 3
    results = launch(_window_mismatch, nranks, env={"RCCLX_TRANSPORT": transport})
    for rank, res in enumerate(results):
        (kind, message), (beyond_kind, beyond_message), last = res.value
        assert kind == "InvalidArgumentError", message
        assert "size mismatch" in message and "4096" in message and "8192" in message
        assert beyond_kind == "InvalidArgumentError", beyond_message
        assert "offset 4090" in beyond_message and "window size 4096" in beyond_message
        assert last == 77 + (rank - 1) % nranks


def test_put_bounds(group):
    win = group.create_window(1024)
    win.put(0, 1020, b"abcd")  # exactly up to the end is fine
    win.put(0, 1024, b"")
    for offset, data in [(1021, b"abcd"), (2000, b""), (0, bytes(1025))]:
        with pytest.raises(ctran.InvalidArgumentError) as info:
            win.put(0, offset, data)
        assert f"offset {offset}" in str(info.value) and "1024" in str(info.value)
    with pytest.raises(ctran.InvalidArgumentError, match="C-contiguous"):
        win.put(0, 0, np.arange(10)[::2])
    with pytest.raises(ctran.InvalidArgumentError, match="buffer"):
        win.put(0, 0, 12345)


def test_bad_window_shape(group):
    with pytest.raises(ctran.InvalidArgumentError, match="bytes must be positive, got 0"):
        group.create_window(0)
    for count in (0, 4097):
        with pytest.raises(ctran.InvalidArgumentError, match=f"numSignals {count}"):
            group.create_window(64, num_signals=count)


def test_bad_signal_slot(group):
    win = group.create_window(64, num_signals=4)
    calls = [
        lambda: win.signal(0, 4),
        lambda: win.signal(0, -1),
        lambda: win.wait_signal(4, 1),
        lambda: win.read_signal(100),
    ]
    for call, slot in zip(calls, [4, -1, 4, 100]):
        with pytest.raises(ctran.InvalidArgumentError) as info:
            call()
        message = str(info.value)
        assert f"slot {slot} is out of range" in message and "4 signal slots" in message


def test_peer_out_of_range(group):
    win = group.create_window(64)
    calls = {
        "put": lambda: win.put(1, 0, b"x"),
        "signal": lambda: win.signal(-1, 0),
        "peerData": lambda: win.peer_buffer(5),
        "waitSignal": lambda: win.wait_signal(0, 1, from_peer=7),
        "transportTo": lambda: group.transport_to(3),
        "checkPeer": lambda: group.check_peer(2),
        "send": lambda: group.bootstrap.send(3, b""),
        "recv": lambda: group.bootstrap.recv(-2),
    }
    peers = {
        "put": 1,
        "signal": -1,
        "peerData": 5,
        "waitSignal": 7,
        "transportTo": 3,
        "checkPeer": 2,
        "send": 3,
        "recv": -2,
    }
    for name, call in calls.items():
        with pytest.raises(ctran.InvalidArgumentError) as info:
            call()
        assert name in str(info.value) and f"peer {peers[name]} is out of range" in str(info.value)


def test_wait_without_a_signal_times_out(group, monkeypatch):
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "300")
    win = group.create_window(64)
    start = time.monotonic()
    with pytest.raises(ctran.TimeoutError) as info:
        win.wait_signal(1, 5)
    assert 0.25 < time.monotonic() - start < 3
    assert "signal 1" in str(info.value) and "reach 5" in str(info.value)
    assert "RCCLX_TIMEOUT_MS=300" in str(info.value)


def test_double_destroy_and_use_after_destroy(group):
    win = group.create_window(64)
    other = group.create_window(64)
    win.destroy()
    assert win.destroyed and not other.destroyed
    with pytest.raises(ctran.InvalidUsageError, match="already destroyed"):
        win.destroy()
    for use in (
        lambda: win.put(0, 0, b"x"),
        lambda: win.signal(0, 0),
        lambda: win.buffer,
        lambda: win.read_signal(0),
        lambda: win.wait_signal(0, 0),
        lambda: win.peer_buffer(0),
    ):
        with pytest.raises(ctran.InvalidUsageError, match="window was already destroyed"):
            use()
    group.destroy()
    assert group.destroyed
    with pytest.raises(ctran.InvalidUsageError, match="already destroyed"):
        group.destroy()
    for use in (
        lambda: group.create_window(64),
        lambda: group.bootstrap,
        lambda: group.check_peer(0),
    ):
        with pytest.raises(ctran.InvalidUsageError, match="peer group was already destroyed"):
            use()
    # A window outliving its group cannot be used, but can still be released.
    with pytest.raises(ctran.InvalidUsageError, match="peer group was already destroyed"):
        other.signal(0, 0)
    other.destroy()
    assert other.destroyed


# --- configuration ---------------------------------------------------------------------------


def test_bad_timeout_knob(monkeypatch):
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "abc")
    with pytest.raises(ctran.InvalidArgumentError) as info:
        ctran.MemoryStore().get("k")
    assert "RCCLX_TIMEOUT_MS='abc'" in str(info.value) and "integer" in str(info.value)
    with pytest.raises(ctran.InvalidArgumentError, match="RCCLX_TIMEOUT_MS='abc'"):
        ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1)


def test_negative_timeout_knob(monkeypatch):
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "-1")
    with pytest.raises(ctran.InvalidArgumentError) as info:
        ctran.MemoryStore().get("k")
    assert "RCCLX_TIMEOUT_MS='-1'" in str(info.value) and "non-negative" in str(info.value)


def test_bad_transport_knob(monkeypatch):
    monkeypatch.setenv("RCCLX_TRANSPORT", "pigeon")
    with pytest.raises(ctran.InvalidArgumentError) as info:
        ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1)
    assert "RCCLX_TRANSPORT='pigeon'" in str(info.value) and "auto|shm|tcp" in str(info.value)


def test_bad_spin_knob(group, monkeypatch):
    win = group.create_window(64)
    monkeypatch.setenv("RCCLX_SPIN_US", "1.5")
    with pytest.raises(ctran.InvalidArgumentError, match=r"RCCLX_SPIN_US='1\.5'"):
        win.wait_signal(0, 1)
