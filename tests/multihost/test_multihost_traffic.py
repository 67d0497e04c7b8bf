"""The bytes between test hosts cross the veths: each host's eth0 counters, read inside the host
(its own /sys) before and after a collective, grow by at least what must leave and reach the
host, and the bridge's ports saw it too. The check fails on a job whose ranks share one host
(shared memory moves nothing on the network). tbf on a host's link limits what it sends. And
the LP all_reduce moves fewer bytes over the link than the full precision one.

Between the two counter readings the ranks meet in the job's file store, which moves nothing on
the network, so the difference is the collective's traffic alone (plus a few packets of headers
and acknowledgements).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import rcclx_helpers as H
from hosts import Counters, read_counters

pytestmark = pytest.mark.multihost

MIB = 1 << 20
COUNT = 2 * MIB // 4  # float32 elements per rank: 2 MiB


def _measured(ctx, name, call):
    """Runs call() on every rank between two readings of this host's eth0 counters (taken by
    the host's first rank); returns (call's value, counters difference or None)."""
    ctx.barrier(f"{name}/before")
    before = read_counters() if ctx.local_rank == 0 else None
    ctx.barrier(f"{name}/read")
    value = call()
    ctx.barrier(f"{name}/after")
    delta = read_counters() - before if ctx.local_rank == 0 else None
    return value, delta


def _all_gather_rank(ctx, count):
    """all_gather of `count` random (incompressible) float32 per rank: (problem, counters)."""
    comm = H.comm_of(ctx)
    n = comm.size
    rngs = [np.random.default_rng([7, r]) for r in range(n)]
    inputs = [rng.standard_normal(count).astype(np.float32) for rng in rngs]
    out = np.empty(n * count, np.float32)
    comm.all_gather(inputs[ctx.rank][:16], out[: 16 * n])  # every path used once before
    _, delta = _measured(ctx, "all_gather", lambda: comm.all_gather(inputs[ctx.rank], out))
    comm.destroy()
    problem = None if np.array_equal(out, np.concatenate(inputs)) else "all_gather result differs"
    return problem, delta


def host_deltas(results, placement) -> dict[int, Counters]:
    """Host index -> its counters difference (from the rank that read it)."""
    return {placement[r.rank]: r.value[1] for r in results if r.value[1] is not None}


def assert_crossed(deltas: dict[int, Counters], placement, block_bytes: int) -> None:
    """An all_gather of `block_bytes` per rank, ranks on hosts as `placement` says: every host
    received every other host's ranks' blocks and sent each of its own at least once."""
    for h in sorted(set(placement)):
        local = placement.count(h)
        remote = len(placement) - local
        d = deltas.get(h, Counters(0, 0, 0, 0))
        if remote == 0:
            continue
        assert d.rx_bytes >= remote * block_bytes, (
            f"host {h} received {d.rx_bytes} bytes on eth0, less than the {remote} remote "
            f"blocks of {block_bytes} bytes it must have received"
        )
        assert d.tx_bytes >= local * block_bytes, (
            f"host {h} sent {d.tx_bytes} bytes on eth0, less than its {local} blocks of "
            f"{block_bytes} bytes"
        )


def test_all_gather_bytes_cross_the_veths(cluster, transport, record_property):
    placement = [0, 0, 1, 1]
    ports = [cluster.switch.counters(f"port{h}") for h in range(2)]
    results = cluster.launch(_all_gather_rank, placement, COUNT, transport=transport)
    assert all(r.value[0] is None for r in results), [r.value[0] for r in results]
    deltas = host_deltas(results, placement)
    assert_crossed(deltas, placement, COUNT * 4)
    # The bridge saw what the hosts sent (the switch side counts the launch's setup too).
    for h in range(2):
        port = cluster.switch.counters(f"port{h}") - ports[h]
        assert port.rx_bytes >= deltas[h].tx_bytes and port.tx_bytes >= deltas[h].rx_bytes
    figures = {h: (d.tx_bytes, d.rx_bytes) for h, d in deltas.items()}
    print(f"all_gather of {COUNT * 4} bytes per rank, eth0 (tx, rx) by host: {figures}")
    record_property("eth0 bytes (host: tx, rx)", figures)


def test_the_check_fails_when_the_ranks_share_a_host(cluster, transport):
    # The same job with every rank on host 0 (shared memory between them): eth0 stays quiet
    # and the check made for two hosts fails.
    results = cluster.launch(_all_gather_rank, [0, 0, 0, 0], COUNT, transport=transport)
    assert all(r.value[0] is None for r in results)
    deltas = host_deltas(results, [0, 0, 0, 0])
    assert deltas[0].tx_bytes < 64 * 1024 and deltas[0].rx_bytes < 64 * 1024, deltas
    with pytest.raises(AssertionError, match="received .* bytes on eth0"):
        assert_crossed(deltas, [0, 0, 1, 1], COUNT * 4)


def _timed_send_rank(ctx, nbytes):
    """Rank 1 sends `nbytes` to rank 0; returns the seconds it took (on rank 0)."""
    import time

    comm = H.comm_of(ctx)
    buf = np.zeros(nbytes, np.uint8)
    comm.barrier()
    t = time.monotonic()
    if ctx.rank == 1:
        comm.send(np.full(nbytes, 7, np.uint8), 0)
    else:
        comm.recv(buf, 1)
    seconds = time.monotonic() - t
    comm.barrier()
    comm.destroy()
    assert ctx.rank == 1 or (buf == 7).all()
    return seconds


def test_a_rate_limit_on_a_link_slows_what_crosses_it(make_cluster, transport):
    nbytes, rate = 4 * MIB, 100e6 / 8  # 100 mbit/s: 12.5 MB/s
    cluster = make_cluster(2)
    free = cluster.launch(_timed_send_rank, [0, 1], nbytes, transport=transport)[0].value
    cluster.hosts[1].limit_rate("100mbit")
    limited = cluster.launch(_timed_send_rank, [0, 1], nbytes, transport=transport)[0].value
    floor = nbytes / rate
    print(f"{nbytes} bytes host 1 -> host 0: {free:.3f} s, {limited:.3f} s at 100 mbit/s")
    assert limited >= 0.8 * floor, f"{nbytes} bytes in {limited:.3f} s through a 100 mbit/s link"
    assert free < limited / 3, f"unlimited {free:.3f} s, limited {limited:.3f} s"


def _lp_rank(ctx, count):
    """Bytes this host sent for an all_reduce of `count` float32: full precision by the
    selector's choice and by ring, then LP; None on a host's other ranks."""
    comm = H.comm_of(ctx)
    x = np.random.default_rng([3, ctx.rank]).standard_normal(count).astype(np.float32)
    out = np.empty_like(x)
    calls = {
        "full": dict(low_precision=False),
        "full ring": dict(low_precision=False, algo="ring"),
        "LP": dict(low_precision=True),
    }
    sent = {}
    for name, kw in calls.items():
        call = functools.partial(comm.all_reduce, x, out, **kw)
        _, delta = _measured(ctx, name, call)
        sent[name] = None if delta is None else delta.tx_bytes
    comm.destroy()
    return sent


def test_low_precision_all_reduce_sends_fewer_bytes_between_hosts(
    cluster, transport, record_property
):
    placement = [0, 0, 1, 1]
    results = cluster.launch(_lp_rank, placement, 4 * COUNT, transport=transport)
    for r in results:
        sent = r.value
        if sent["LP"] is None:
            continue
        host = placement[r.rank]
        # FP8 plus a float32 scale per 256 elements: about 0.254 of float32's bytes, moved by
        # the same ring schedule as the full-precision ring.
        assert sent["LP"] < 0.36 * sent["full ring"], f"host {host}: {sent}"
        assert sent["LP"] < sent["full"], f"host {host}: {sent}"
        ratios = {k: round(sent["LP"] / sent[k], 2) for k in ("full", "full ring")}
        print(f"all_reduce of {4 * COUNT * 4} bytes, host {host} eth0 tx: {sent}, LP / {ratios}")
        record_property(f"host {host} eth0 tx bytes", sent)


def _ucx_loads() -> bool:
    import ctran

    return bool(ctran.ucx_library()[0])


@pytest.mark.skipif(not _ucx_loads(), reason="libucp cannot be loaded here (no UCX)")
def test_all_gather_over_ucx_crosses_the_veths(cluster):
    # RCCLX_NET_TRANSPORT=ucx: the hosts have no RDMA device, so UCX runs over TCP on eth0; the
    # ranks of one host stay on shared memory.
    placement = [0, 0, 1, 1]
    env = {"RCCLX_NET_TRANSPORT": "ucx", "RCCLX_DEBUG": "INFO"}
    results = cluster.launch(_ucx_all_gather_rank, placement, COUNT, env=env)
    for r in results:
        kinds = r.value[2]
        assert kinds == [
            "self" if p == r.rank else "shm" if placement[p] == placement[r.rank] else "ucx"
            for p in range(len(placement))
        ], (r.rank, kinds)
    assert all(r.value[0] is None for r in results), [r.value[0] for r in results]
    assert_crossed(host_deltas(results, placement), placement, COUNT * 4)


def _ucx_all_gather_rank(ctx, count):
    """The transports a peer group of this job picks (ctran), then the all_gather."""
    import ctran

    group = ctran.PeerGroup.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    kinds = [group.transport_to(p) for p in range(ctx.nranks)]
    group.destroy()
    return (*_all_gather_rank(ctx, count), kinds)
