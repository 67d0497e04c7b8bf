"""Windows over shm and tcp: put/signal/wait ordering, direct peer access, all-to-all, sequences."""

import ctran_helpers
import pytest

from launcher import launch, values


def _window_rank(ctx):
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    kinds = [group.transport_to(p) for p in range(ctx.nranks)]
    topo = group.topology
    problems = ctran_helpers.exercise_window(group)
    job_tag = group.job_tag
    group.destroy()
    return {
        "kinds": kinds,
        "problems": problems,
        "num_hosts": topo.num_hosts,
        "local_ranks": list(topo.local_ranks),
        "job_tag": job_tag,
    }


@pytest.mark.parametrize("transport", ["shm", "tcp"])
@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_window_put_signal_wait(nranks, transport):
    before = ctran_helpers.rcclx_shm_files()
    env = {"RCCLX_TRANSPORT": transport, "RCCLX_TIMEOUT_MS": 20000}
    results = values(launch(_window_rank, nranks, env=env))
    for rank, res in enumerate(results):
        assert res["problems"] == [], f"rank {rank}: {res['problems']}"
        want = ["self" if p == rank else transport for p in range(nranks)]
        assert res["kinds"] == want
        # Forcing tcp changes the transport, not the topology: all ranks share this host.
        assert res["num_hosts"] == 1
        assert res["local_ranks"] == list(range(nranks))
    assert len({res["job_tag"] for res in results}) == 1
    assert not ctran_helpers.leftover_shm_files(before)


def _auto_rank(ctx):
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    return [group.transport_to(p) for p in range(ctx.nranks)]


def test_auto_transport_is_shm_on_one_host():
    results = values(launch(_auto_rank, 2, env={"RCCLX_TRANSPORT": "auto"}))
    assert results == [["self", "shm"], ["shm", "self"]]


def _windows_are_independent_rank(ctx):
    import numpy as np

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    peer = 1 - ctx.rank
    first = group.create_window(4096, num_signals=2)
    second = group.create_window(8192, num_signals=3)
    assert (first.nbytes, first.num_signals) == (4096, 2)
    assert (second.nbytes, second.num_signals) == (8192, 3)
    assert first.id != second.id
    first.put(peer, 0, np.array([11 + ctx.rank], dtype=np.int64))
    second.put(peer, 0, np.array([22 + ctx.rank], dtype=np.int64))
    first.signal(peer, 1)
    second.signal(peer, 2, 5)
    first.wait_signal(1, 1, from_peer=peer)
    second.wait_signal(2, 5, from_peer=peer)
    got = (
        int(np.frombuffer(first.buffer, dtype=np.int64)[0]),
        int(np.frombuffer(second.buffer, dtype=np.int64)[0]),
        first.read_signal(2 - 1),
        first.read_signal(0),
        second.read_signal(2),
        second.read_signal(1),
    )
    group.bootstrap.barrier()
    first.destroy()
    second.destroy()
    group.destroy()
    return got


@pytest.mark.parametrize("transport", ["shm", "tcp"])
def test_two_windows_do_not_mix(transport):
    results = values(launch(_windows_are_independent_rank, 2, env={"RCCLX_TRANSPORT": transport}))
    for rank, got in enumerate(results):
        peer = 1 - rank
        assert got == (11 + peer, 22 + peer, 1, 0, 5, 0)


def _release_during_puts_rank(ctx):
    import time

    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    win = group.create_window(32 << 20, num_signals=1)
    group.bootstrap.barrier()
    store = ctx.store()
    if ctx.rank == 0:
        payload = bytes(32 << 20)
        puts = 0
        while not store.check(["release/done"]):
            win.put(1, 0, payload)
            puts += 1
        store.set("release/stopped", b"1")
        outcome = {"puts": puts}
    else:
        time.sleep(0.3)  # rank 0's puts keep arriving, one of them mid-receive
        win.destroy()
        try:
            group.check_peer(0)
            group.check_failed()
            outcome = {"peer_ok": True}
        except ctran.Error as e:
            outcome = {"peer_ok": False, "error": str(e)}
        store.set("release/done", b"1")
        store.get("release/stopped")  # the group goes only after rank 0's last put
    if not win.destroyed:
        win.destroy()
    group.destroy()
    return outcome


def test_a_window_released_while_a_peer_puts_into_it_over_tcp():
    # The receiving thread must not write a put's payload into memory the release unmaps: the
    # release waits for the receive in flight (before, a receive into the unmapped window
    # failed with EFAULT, which marked the connection to the live sender as failed).
    results = values(launch(_release_during_puts_rank, 2, env={"RCCLX_TRANSPORT": "tcp"}))
    assert results[0]["puts"] > 1, results
    assert results[1]["peer_ok"], results[1]
