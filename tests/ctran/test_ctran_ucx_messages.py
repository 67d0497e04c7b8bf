"""Two-sided messages over the ucx transport (PeerGroup.exchange_messages), on host memory: what
moves GPU buffers between hosts in place where UCX drives CUDA memory. Matching per pair in
issue order (within a batch and across batches, messages to this rank included), sizes that
differ, a killed peer, a peer that never sends, a wait on this rank's own messages ended by
another rank's failure, the errors for peers not on ucx, and the agreement on GPU memory
(RCCLX_UCX_GPU_MEMORY).

Skips, with the reason, when ctran cannot load libucp.so.0 here.
"""

import os

import pytest
from ctran_helpers import needs_ucx

import ctran
from launcher import launch, pretend_hosts, values

FORCED = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}


def _payload(sender: int, receiver: int, k: int, n: int) -> bytes:
    """The k-th message from `sender` to `receiver`: n bytes both sides can compute."""
    import numpy as np

    return (
        np.random.default_rng((sender, receiver, k)).integers(0, 256, n, dtype=np.uint8).tobytes()
    )


def _sizes(sender: int, receiver: int) -> list[int]:
    # Eager and rendezvous sizes, an empty one, sizes that differ per pair.
    return [1 + 7 * sender + receiver, 0, 70_000 + 1000 * receiver, (3 << 20) + sender]


def _all_pairs_rank(ctx, batches: int):
    """Every rank sends _sizes(me, r) to every rank r (itself too), in `batches` batches, each
    with its receives first, peers in reverse order. Matching goes by issue order per pair,
    whatever the order across peers and batches. Returns what arrived wrong."""
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    me, n = ctx.rank, ctx.nranks
    count = len(_sizes(0, 0))
    recvs = {(r, k): bytearray(size) for r in range(n) for k, size in enumerate(_sizes(r, me))}
    per_batch = -(-count // batches)
    for b in range(batches):
        ks = range(b * per_batch, min((b + 1) * per_batch, count))
        batch = [(False, r, recvs[(r, k)]) for r in reversed(range(n)) for k in ks]
        batch += [
            (True, r, bytearray(_payload(me, r, k, _sizes(me, r)[k]))) for r in range(n) for k in ks
        ]
        group.exchange_messages(batch)
    wrong = [(r, k) for (r, k), got in recvs.items() if bytes(got) != _payload(r, me, k, len(got))]
    group.destroy()
    return wrong


@needs_ucx
@pytest.mark.parametrize("nranks,batches", [(2, 1), (3, 2), (3, 4)])
def test_messages_match_per_pair_in_issue_order(nranks, batches):
    results = values(launch(_all_pairs_rank, nranks, batches, env=FORCED, timeout=120))
    assert results == [[]] * nranks


def _pretend_hosts_rank(ctx):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    peer = ctx.rank ^ 2  # the same place on the other pretend host
    got = bytearray(5)
    group.exchange_messages(
        [(True, peer, bytearray(f"from{ctx.rank}".encode())), (False, peer, got)]
    )
    # The peer on this host is reached over shared memory, not ucx.
    try:
        group.exchange_messages([(True, ctx.rank ^ 1, bytearray(1))])
        same_host = ("returned", "")
    except ctran.Error as e:
        same_host = (type(e).__name__, str(e))
    moves = [group.moves_device_memory(p) for p in range(ctx.nranks)]
    group.destroy()
    return bytes(got).decode(), same_host, moves


@needs_ucx
def test_pretend_hosts_exchange_across_and_refuse_a_peer_on_shared_memory():
    env = {"RCCLX_TIMEOUT_MS": 20000, "RCCLX_NET_TRANSPORT": "ucx"}
    results = values(
        launch(_pretend_hosts_rank, 4, env=env, rank_env=pretend_hosts(ranks_per_host=2))
    )
    for rank, (got, same_host, moves) in enumerate(results):
        assert got == f"from{rank ^ 2}"
        kind, message = same_host
        assert kind == "InvalidArgumentError", same_host
        assert f"rank {rank ^ 1} is reached over shm, not ucx" in message
        # UCX here drives no CUDA memory (no GPU driver in CI): nothing moves GPU memory.
        assert moves == [False] * 4 or _has_gpu_driver()


def _has_gpu_driver() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/kfd"))


def _no_ucx_rank(ctx):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    try:
        group.exchange_messages([(True, 1 - ctx.rank, bytearray(1))])
        out = ("returned", "")
    except ctran.Error as e:
        out = (type(e).__name__, str(e))
    group.destroy()
    return out


def test_a_group_without_ucx_says_messages_need_it():
    results = values(launch(_no_ucx_rank, 2, env={"RCCLX_TRANSPORT": "tcp"}))
    for kind, message in results:
        assert kind == "InvalidUsageError"
        assert "two-sided messages need the ucx transport" in message


def _mismatch_rank(ctx, sent: int, expected: int):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    try:
        if ctx.rank == 0:
            group.exchange_messages([(True, 1, bytearray(sent))], timeout_ms=3000)
        else:
            group.exchange_messages([(False, 0, bytearray(expected))])
        out = ("returned", "")
    except ctran.Error as e:
        out = (type(e).__name__, str(e))
    group.bootstrap.barrier()
    group.destroy()
    return out


@needs_ucx
@pytest.mark.parametrize(
    "sent,expected,says",
    [
        (100, 200, "rank 0 sent 100 bytes where this rank's matching receive expects 200"),
        (300, 200, "rank 0 sent more than the 200 bytes this rank's matching receive expects"),
        (1 << 20, 4096, "rank 0 sent more than the 4096 bytes"),
    ],
)
def test_a_receive_of_another_size_is_a_usage_error_naming_both(sent, expected, says):
    results = launch(_mismatch_rank, 2, sent, expected, env=FORCED, expect_errors=True, timeout=60)
    receiver = results[1]
    assert receiver.ok, f"{receiver.error_type}: {receiver.error}"
    kind, message = receiver.value
    assert kind == "InvalidUsageError", receiver.value
    assert message.startswith("exchange_messages: " + says), message


def _silent_or_killed_peer_rank(ctx, kill: bool):
    import signal
    import time

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    group.bootstrap.barrier()
    if ctx.rank == 1:
        if kill:
            time.sleep(0.3)  # rank 0 is waiting by then
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(4)  # alive, sending nothing, until rank 0 gave up
        group.destroy()
        return None
    start = time.monotonic()
    try:
        group.exchange_messages([(False, 1, bytearray(1 << 20))], timeout_ms=TIMEOUT_MS)
        out = ("returned", "", False)
    except ctran.Error as e:
        out = (type(e).__name__, str(e), isinstance(e, ctran.RemoteError))
    return {"outcome": out, "elapsed": time.monotonic() - start}


TIMEOUT_MS = 1500


@needs_ucx
def test_a_killed_peer_ends_the_wait_with_a_remote_error_naming_it():
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}
    results = launch(_silent_or_killed_peer_rank, 2, True, env=env, expect_errors=True, timeout=60)
    assert results[1].exitcode == -9
    assert results[0].ok, f"{results[0].error_type}: {results[0].error}"
    kind, message, remote = results[0].value["outcome"]
    assert remote and kind != "TimeoutError", (kind, message)
    assert "rank 1" in message, message
    assert results[0].value["elapsed"] < 15, results[0].value  # well before RCCLX_TIMEOUT_MS


@needs_ucx
def test_a_peer_that_never_sends_times_out_naming_it():
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}
    results = launch(_silent_or_killed_peer_rank, 2, False, env=env, expect_errors=True, timeout=60)
    kind, message, remote = results[0].value["outcome"]
    assert kind == "TimeoutError", (kind, message)
    assert "exchange_messages's 1 message(s) over ucx" in message, message
    assert "receive of 1048576 bytes from rank 1" in message, message
    assert TIMEOUT_MS / 1000 <= results[0].value["elapsed"] < TIMEOUT_MS / 1000 + 3


def _waits_on_itself_rank(ctx):
    """Rank 0 waits on a receive from itself that nothing matches (20 s allowed); rank 1 gives
    up on a receive from rank 0 after 1.5 s and reports it. Returns how rank 0's wait ended."""
    import time

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    group.bootstrap.barrier()
    peer = 1 - ctx.rank
    batch = [(False, 0 if ctx.rank == 0 else peer, bytearray(64))]
    start = time.monotonic()
    try:
        group.exchange_messages(batch, timeout_ms=20000 if ctx.rank == 0 else TIMEOUT_MS)
        out = ("returned", "")
    except ctran.Error as e:
        out = (type(e).__name__, str(e))
    return {"outcome": out, "elapsed": time.monotonic() - start}


@needs_ucx
def test_a_wait_on_messages_to_itself_ends_when_another_rank_reports_a_failure():
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}
    results = launch(_waits_on_itself_rank, 2, env=env, expect_errors=True, timeout=60)
    assert results[1].value["outcome"][0] == "TimeoutError", results[1].value
    kind, message = results[0].value["outcome"]
    assert kind == "RemoteError" and "rank 1 reported" in message, (kind, message)
    assert results[0].value["elapsed"] < 10, results[0].value  # not at its own 20 s deadline


def _agreement_rank(ctx):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    moves = [group.moves_device_memory(p) for p in range(ctx.nranks)]
    group.destroy()
    return moves


@needs_ucx
def test_one_rank_turning_gpu_memory_off_turns_it_off_for_all():
    # Whatever the UCX drives, a rank with RCCLX_UCX_GPU_MEMORY=0 stages, so every rank must.
    results = values(
        launch(
            _agreement_rank,
            3,
            env=FORCED,
            rank_env=lambda r: {"RCCLX_UCX_GPU_MEMORY": "0"} if r == 2 else {},
        )
    )
    assert results == [[False] * 3] * 3


def _receive_posted_later_rank(ctx):
    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    peer = 1 - ctx.rank
    big = 4 << 20  # past UCX's eager sizes: the send completes only once the peer receives
    try:
        # Each rank sends first and receives in a later batch: neither send can complete, as
        # with NCCL's sends outside a group.
        group.exchange_messages([(True, peer, bytearray(big))], timeout_ms=TIMEOUT_MS)
        group.exchange_messages([(False, peer, bytearray(big))], timeout_ms=TIMEOUT_MS)
        out = ("returned", "")
    except ctran.Error as e:
        out = (type(e).__name__, str(e))
    group.destroy()
    return out


@needs_ucx
def test_sends_waiting_for_receives_of_a_later_batch_time_out_cleanly():
    env = {"RCCLX_TRANSPORT": "ucx", "RCCLX_TIMEOUT_MS": 20000}
    results = launch(_receive_posted_later_rank, 2, env=env, expect_errors=True, timeout=60)
    for res in results:
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error} (exit {res.exitcode})"
        kind, message = res.value
        assert kind in ("TimeoutError", "RemoteError"), res.value
        assert "send of 4194304 bytes to rank" in message or "reported" in message, message
