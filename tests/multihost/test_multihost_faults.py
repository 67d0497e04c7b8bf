"""A host's link taken down in the middle of a loop of all_reduce (2 hosts x 2 ranks, tcp
between the hosts, RCCLX_TIMEOUT_MS=3000): every rank of the other host raises within the
timeout (plus a margin) an error naming a rank of the unreachable host, no rank hangs (the
launch kills what still runs at its timeout and says so), and nothing is left: no process on a
host, nothing in a host's /dev/shm, and after the cluster closes no namespace, veth or holder
(the fixtures check both).

Two tests marked xfail say what does not work yet: a link that goes down in the middle of a
message (the receiver's destroy() and the sender's send() hang), and errors that name the
unreachable host.
"""

from __future__ import annotations

import time

import pytest
import rcclx_helpers as H

pytestmark = pytest.mark.multihost

TIMEOUT_MS = 3000
MARGIN_S = 2.0  # past the timeout: the wait that was running when the link went down, + slack
PLACEMENT = [0, 0, 1, 1]
CUT = 1  # the host whose link goes down
KIB = 1024


_KEPT = []  # communicators left for the process's exit (in_host.py ends a rank by os._exit)


class RankHung(AssertionError):
    pass


def _looping_rank(ctx, nbytes):
    """Loops on all_reduce until it raises; returns what it raised and when. The communicator
    is not destroyed: after a link went down in the middle of a message, destroy() hangs (the
    xfail test below), which is not what this loop is about."""
    import numpy as np

    import rcclx_core as rc

    comm = H.comm_of(ctx)
    _KEPT.append(comm)
    x = np.ones(nbytes // 4, np.float32)
    out = np.empty_like(x)
    comm.all_reduce(x, out)  # every connection is up before the count below
    ctx.store().add("looping", 1)
    start = time.monotonic()
    outcome, iterations = None, 0
    while time.monotonic() - start < 6 * TIMEOUT_MS / 1000:
        try:
            comm.all_reduce(x, out)
            iterations += 1
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), time.time())
            break
    return {"outcome": outcome, "iterations": iterations}


def _cut_when_ready(cluster, job, ready: int, after_s: float = 0.3):
    """Takes host CUT's link down `after_s` after the job's store counts `ready` ranks at
    "looping"; returns the time it went down."""
    store = job.store()
    deadline = time.monotonic() + 30
    while store.add("looping", 0) < ready and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(after_s)
    cluster.hosts[CUT].set_link(False)
    return time.time()


def _cut_mid_loop(cluster, nbytes, transport):
    """The all_reduce loop on every rank, host CUT's link taken down in it: (results, the time
    the link went down)."""
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS}
    job = cluster.start(_looping_rank, PLACEMENT, nbytes, env=env, transport=transport)
    down_at = _cut_when_ready(cluster, job, len(PLACEMENT))
    return job.wait(timeout=30, expect_errors=True), down_at


def _check_the_other_host(results, down_at):
    """Every rank of the host that kept its link raised in time, naming an unreachable rank;
    returns (seconds to each error, messages)."""
    unreachable = [r for r, h in enumerate(PLACEMENT) if h == CUT]
    delays, messages = [], []
    for res in results:
        if res.error_type == "Hung":
            raise RankHung(f"rank {res.rank} hung:\n{res.traceback}")
        if PLACEMENT[res.rank] == CUT:
            continue
        assert res.ok, f"rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback}"
        v = res.value
        assert v["iterations"] > 0, f"rank {res.rank} never looped before the link went down"
        assert v["outcome"] is not None, f"rank {res.rank} never raised"
        kind, message, raised_at = v["outcome"]
        delay = raised_at - down_at
        assert delay <= TIMEOUT_MS / 1000 + MARGIN_S, f"rank {res.rank}: {delay:.2f} s: {message}"
        assert any(f"rank {u}" in message for u in unreachable), f"rank {res.rank}: {message}"
        delays.append(delay)
        messages.append(f"{kind}: {message}")
    return delays, messages


def test_a_link_down_mid_loop_becomes_an_error_on_the_other_host(make_cluster, transport):
    cluster = make_cluster(2)
    results, down_at = _cut_mid_loop(cluster, 16 * KIB, transport)
    delays, messages = _check_the_other_host(results, down_at)
    print(f"link down -> error on host 0 after {[round(d, 2) for d in delays]} s: {messages}")


@pytest.mark.xfail(
    strict=True,
    reason="the error names the unreachable rank but not its host: neither the timeout "
    "('... from rank 3 ...') nor the report passed on ('rank 0 reported: ...') says which "
    "host (name or address) rank 3 is on",
)
def test_the_error_names_the_unreachable_host(make_cluster, transport):
    cluster = make_cluster(2)
    results, down_at = _cut_mid_loop(cluster, 16 * KIB, transport)
    _, messages = _check_the_other_host(results, down_at)
    host = cluster.hosts[CUT]
    for message in messages:
        assert host.name in message or host.address in message, message


def _receiving_rank(ctx, nbytes):
    """Rank 3 sends rank 0 `nbytes`, rank 0 receives them (and says so in the store); both
    return what their call raised and how long destroy() took."""
    import numpy as np

    import rcclx_core as rc

    comm = H.comm_of(ctx)
    comm.barrier()
    outcome, destroy_s = None, None
    if ctx.rank == 3:
        try:
            comm.send(np.full(nbytes, 3, np.uint8), 0)
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), time.time())
    elif ctx.rank == 0:
        ctx.store().add("looping", 1)
        try:
            comm.recv(np.zeros(nbytes, np.uint8), 3)
        except rc.Error as e:
            outcome = (type(e).__name__, str(e), time.time())
    if ctx.rank in (0, 3):
        t = time.monotonic()
        comm.destroy()
        destroy_s = time.monotonic() - t
    else:
        _KEPT.append(comm)
    return {"outcome": outcome, "destroy_s": destroy_s}


@pytest.mark.xfail(
    strict=True,
    raises=RankHung,
    reason="a link that goes down in the middle of a message hangs both ends: the receiver's "
    "destroy() (the tcp transport's progress thread blocks for good in recv() of the rest of "
    "the put, TcpTransport::handleMessage reading the payload by Socket::recvAll without a "
    "deadline, and ~TcpTransport joins that thread before it shuts the sockets down) and the "
    "sender's send() (Socket::sendAll blocks in send() on a full socket buffer that never "
    "drains, with no deadline, so the sender never raises); the receiver's error itself comes "
    "in time",
)
def test_both_ends_return_after_a_link_went_down_in_the_middle_of_a_message(
    make_cluster, transport
):
    # 16 MiB in one put through a 50 mbit/s link (about 2.7 s on the wire), the link taken
    # down 0.5 s in: rank 0's transport is reading that put's payload when it goes, rank 3's
    # is sending it.
    nbytes = 16 * 1024 * KIB
    cluster = make_cluster(2)
    cluster.hosts[CUT].limit_rate("50mbit")
    env = {"RCCLX_TIMEOUT_MS": TIMEOUT_MS, "RCCLX_P2P_CHUNK_BYTES": str(nbytes)}
    job = cluster.start(_receiving_rank, PLACEMENT, nbytes, env=env, transport=transport)
    down_at = _cut_when_ready(cluster, job, 1, after_s=0.5)
    results = job.wait(timeout=TIMEOUT_MS / 1000 + 3, expect_errors=True)
    hung = [r.rank for r in results if r.error_type == "Hung"]
    if hung:
        raise RankHung(f"ranks {hung} hung:\n{results[hung[0]].traceback}")
    for rank, peer in ((0, 3), (3, 0)):
        assert results[rank].ok, results[rank]
        kind, message, raised_at = results[rank].value["outcome"]
        assert raised_at - down_at <= TIMEOUT_MS / 1000 + MARGIN_S, (rank, message)
        assert f"rank {peer}" in message, (rank, message)
    assert results[0].value["destroy_s"] < 1.0, results[0].value
