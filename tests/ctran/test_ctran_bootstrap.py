"""Bootstrap by unique id, by the torchrun environment and by stores, and its collectives."""

import threading

import checks
import ctran_helpers
import pytest

import ctran
from launcher import launch, values

METHODS = ["unique_id", "env", "tcp_store", "file_store", "python_store"]


def _payload(rank: int, round_: int) -> bytes:
    # Rank 0 contributes an empty blob in round 0; the others blobs of different lengths with NULs.
    return bytes([rank]) * (rank * 3 + round_) + (b"\x00r%d" % round_ if rank or round_ else b"")


def _join(ctx, method: str, arg):
    """(Bootstrap, PeerGroup) joined by `method`, each through its own rendezvous."""
    import os

    import ctran

    if method == "unique_id":
        store = ctx.store()
        if ctx.rank == 0:
            store.set("uids", ctran.create_unique_id() + ctran.create_unique_id())
        uids = store.get("uids")
        boot = ctran.Bootstrap.from_unique_id(uids[:128], ctx.rank, ctx.nranks)
        group = ctran.PeerGroup.from_unique_id(uids[128:], ctx.rank, ctx.nranks)
    elif method == "env":
        boot = ctran.Bootstrap.from_env()
        # A second store, on a port named by RCCLX_BOOTSTRAP_PORT, for the peer group.
        os.environ["RCCLX_BOOTSTRAP_PORT"] = str(int(os.environ["MASTER_PORT"]) + 2)
        group = ctran.PeerGroup.from_env()
    else:
        if method == "tcp_store":
            store = ctx.store()
        elif method == "file_store":
            store = ctran.FileStore(arg)
        else:
            store = ctran_helpers.ForwardingStore(ctx.store())
        wrapped = ctran.PythonStore(store) if method == "python_store" else store
        boot = ctran.Bootstrap.from_store(wrapped, ctx.rank, ctx.nranks, prefix="boot")
        group = ctran.PeerGroup.from_store(store, ctx.rank, ctx.nranks, prefix="group")
    return boot, group


def _bootstrap_rank(ctx, method, arg):
    import os
    import time

    import numpy as np

    out = {}
    if method == "env":
        # Rank 0 hosts the bootstrap store on MASTER_PORT + 1 once it has joined.
        port = int(os.environ["MASTER_PORT"]) + 1
    boot, group = _join(ctx, method, arg)
    if method == "env" and ctx.rank == ctx.nranks - 1:
        import ctran

        probe = ctran.TcpStore("127.0.0.1", port, timeout_ms=5000)
        probe.set("probe", b"here")
        out["env_store_port_ok"] = probe.get("probe", timeout_ms=1000) == b"here"
    out["rank"], out["nranks"] = boot.rank, boot.nranks
    out["gathered"] = [boot.all_gather(_payload(ctx.rank, k)) for k in range(3)]

    # Barrier: every rank marks its arrival in the launch's store before entering; the last
    # rank enters late. After the barrier every mark must be there.
    marks = ctx.store()
    if ctx.rank == ctx.nranks - 1:
        time.sleep(0.05)
    marks.set(f"arrived/{method}/{ctx.rank}", b"1")
    boot.barrier()
    out["marks_after_barrier"] = marks.check([f"arrived/{method}/{r}" for r in range(ctx.nranks)])

    # Point to point: two messages (one empty) to every peer, received in order.
    for peer in range(ctx.nranks):
        if peer != ctx.rank:
            boot.send(peer, b"%d->%d first" % (ctx.rank, peer))
            boot.send(peer, b"")
    out["received"] = {
        peer: [boot.recv(peer), boot.recv(peer)] for peer in range(ctx.nranks) if peer != ctx.rank
    }

    # The peer group joined the same way works: a ring put/signal/wait.
    out["group"] = (group.rank, group.nranks, group.topology.num_hosts)
    win = group.create_window(64, num_signals=1)
    nxt, prv = (ctx.rank + 1) % ctx.nranks, (ctx.rank - 1) % ctx.nranks
    win.put(nxt, 8, np.array([1000 + ctx.rank], dtype=np.int64))
    win.signal(nxt, 0)
    win.wait_signal(0, 1, from_peer=prv)
    out["ring_value"] = int(np.frombuffer(win.buffer, dtype=np.int64)[1])
    group.bootstrap.barrier()
    win.destroy()
    group.destroy()
    boot.barrier()
    return out


def _env_for(port):
    return lambda rank: {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": rank}


@pytest.mark.parametrize("nranks", [2, 3, 4])
@pytest.mark.parametrize("method", METHODS)
def test_bootstrap(method, nranks, tmp_path):
    env, rank_env = {"RCCLX_TIMEOUT_MS": 20000}, None
    if method == "env":
        env["WORLD_SIZE"] = nranks
        rank_env = _env_for(checks.free_port_run(3))
    results = values(
        launch(_bootstrap_rank, nranks, method, str(tmp_path), env=env, rank_env=rank_env)
    )
    for rank, res in enumerate(results):
        assert (res["rank"], res["nranks"]) == (rank, nranks)
        for k in range(3):
            assert res["gathered"][k] == [_payload(r, k) for r in range(nranks)]
        assert res["marks_after_barrier"], f"rank {rank} left the barrier before every rank arrived"
        want = {p: [b"%d->%d first" % (p, rank), b""] for p in range(nranks) if p != rank}
        assert res["received"] == want
        assert res["group"] == (rank, nranks, 1)
        assert res["ring_value"] == 1000 + (rank - 1) % nranks
    if method == "env":
        assert results[-1]["env_store_port_ok"]
    if method == "file_store":
        assert any(tmp_path.iterdir()), "the file store wrote no files"


def _python_store_rank(ctx):
    import ctran

    forwarding = ctran_helpers.ForwardingStore(ctx.store())
    boot = ctran.Bootstrap.from_store(forwarding, ctx.rank, ctx.nranks, prefix="py")
    gathered = boot.all_gather(b"%d" % ctx.rank)
    boot.barrier()
    return gathered, forwarding.calls


def test_python_object_is_adapted_and_used():
    results = values(launch(_python_store_rank, 2))
    for gathered, calls in results:
        assert gathered == [b"0", b"1"]
        assert calls > 0, "the Python store's methods were never called"


def test_bootstrap_with_ranks_as_threads_on_a_memory_store():
    store = ctran.MemoryStore()
    nranks = 3
    results, errors = [None] * nranks, []

    def rank_main(rank):
        try:
            boot = ctran.Bootstrap.from_store(store, rank, nranks)
            results[rank] = boot.all_gather(b"t%d" % rank)
            boot.barrier()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert results == [[b"t0", b"t1", b"t2"]] * nranks


def test_single_rank_group():
    group = ctran.PeerGroup.from_store(ctran.MemoryStore(), 0, 1)
    assert (group.rank, group.nranks, group.transport_to(0)) == (0, 1, "self")
    assert group.bootstrap.all_gather(b"solo") == [b"solo"]
    group.bootstrap.barrier()
    win = group.create_window(16, num_signals=1)
    win.put(0, 0, b"abcd")
    win.signal(0, 0, 3)
    assert win.wait_signal(0, 3, from_peer=0) == 3
    assert bytes(win.buffer[:4]) == b"abcd"
    win.destroy()
    group.destroy()


def test_unique_id_describes_its_store():
    uid = ctran.create_unique_id()
    assert isinstance(uid, bytes) and len(uid) == 128
    host, port = ctran.describe_unique_id(uid).rsplit(":", 1)
    assert host and 0 < int(port) < 65536
    assert uid != ctran.create_unique_id()
    # The id names a live store server in this process, which admits only the id's holders.
    with pytest.raises(ctran.RemoteError, match="wrong job secret"):
        ctran.TcpStore(host, int(port), timeout_ms=2000)
    secret = ctran.unique_id_secret(uid)
    assert len(secret) == 16 and secret != ctran.unique_id_secret(ctran.create_unique_id())
    store = ctran.TcpStore(host, int(port), timeout_ms=2000, secret=secret)
    store.set("k", b"v")
    assert store.get("k", timeout_ms=1000) == b"v"


def _host_leaves_first_rank(ctx):
    import ctran

    boot = ctran.Bootstrap.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    gathered = boot.all_gather(b"%d" % ctx.rank)
    boot.barrier()
    return gathered  # rank 0, which hosts the store, exits at once


def test_store_host_may_exit_right_after_the_last_call():
    # Rank 0 created the unique id, so its process hosts the store; its barrier must not return
    # before every rank has its result, or their barriers fail when the host exits.
    for _ in range(3):
        results = values(launch(_host_leaves_first_rank, 4))
        assert results == [[b"0", b"1", b"2", b"3"]] * 4


@pytest.mark.parametrize("named", [False, True])
def test_a_taken_store_port_is_named_with_where_it_came_from(named, monkeypatch):
    import socket

    port = checks.free_port_run(2)
    store_port = port + 1
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(port))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    if named:
        store_port = checks.free_port_run(1)
        monkeypatch.setenv("RCCLX_BOOTSTRAP_PORT", str(store_port))
    else:
        monkeypatch.delenv("RCCLX_BOOTSTRAP_PORT", raising=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", store_port))
        taken.listen()
        with pytest.raises(ctran.SystemCallError) as caught:
            ctran.Bootstrap.from_env()
    source = "RCCLX_BOOTSTRAP_PORT" if named else "MASTER_PORT + 1"
    assert f"bootstrap store on port {store_port} ({source};" in str(caught.value)
    assert "Address already in use" in str(caught.value)


def _agent_store_rank(ctx):
    import ctran

    boot = ctran.Bootstrap.from_env()
    group = ctran.PeerGroup.from_env()
    gathered = boot.all_gather(b"%d" % ctx.rank)
    boot.barrier()
    return gathered, group.rank


def _torch_agent_store(use_libuv: bool):
    """A torch TCPStore such as a torchrun agent hosts for its workers, and their environment."""
    import datetime

    torch_distributed = pytest.importorskip("torch.distributed")
    agent = torch_distributed.TCPStore(
        "127.0.0.1",
        0,
        is_master=True,
        use_libuv=use_libuv,
        wait_for_workers=False,
        timeout=datetime.timedelta(seconds=20),
    )
    env = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(agent.port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "TORCHELASTIC_RESTART_COUNT": "2",
    }
    return agent, env


@pytest.mark.parametrize("use_libuv", [True, False], ids=["libuv", "classic"])
def test_under_torchrun_the_store_port_is_announced_through_torchruns_store(use_libuv):
    import socket

    agent, env = _torch_agent_store(use_libuv)
    env.update(WORLD_SIZE=3, RCCLX_TIMEOUT_MS=20000)
    # The port after MASTER_PORT is taken, as a closed connection's TIME_WAIT may hold it.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", agent.port + 1))
        taken.listen()
        results = values(launch(_agent_store_rank, 3, env=env, rank_env=lambda r: {"RANK": r}))
    assert results == [([b"0", b"1", b"2"], r) for r in range(3)]
    # Two bootstraps per rank (the Bootstrap's and the PeerGroup's), on two free ports.
    run = "rcclx/bootstrap/restart_2/"
    ports = [int(agent.get(f"{run}port/{n}")) for n in (1, 2)]
    assert len(set(ports)) == 2 and agent.port + 1 not in ports, ports
    assert [agent.add(f"{run}count/rank_{r}", 0) for r in range(3)] == [2, 2, 2]


@pytest.mark.parametrize("rank", [0, 1])
def test_under_torchrun_a_store_that_does_not_answer_is_a_timeout_naming_it(rank, monkeypatch):
    agent, env = _torch_agent_store(use_libuv=True)
    if rank == 0:
        env["MASTER_PORT"] = str(checks.free_port_run(1))  # nothing listens there
    for name, value in {**env, "RANK": str(rank), "WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("RCCLX_TIMEOUT_MS", "300")
    monkeypatch.delenv("RCCLX_BOOTSTRAP_PORT", raising=False)
    with pytest.raises(ctran.TimeoutError) as caught:
        ctran.Bootstrap.from_env()
    waited = "reaching" if rank == 0 else "waiting for rank 0's port in"
    where = (
        f"torchrun's store at 127.0.0.1:{env['MASTER_PORT']} (TORCHELASTIC_USE_AGENT_STORE=True)"
    )
    assert f"timed out {waited} {where}" in str(caught.value)


def _fds_and_threads() -> tuple[int, int]:
    import os

    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def test_unique_id_store_closes_with_its_last_bootstrap():
    # A unique id's store (a listening socket and a thread here) serves its group until the last
    # bootstrap of this process that joined it is gone, a failed join included; then it closes.
    ctran.Bootstrap.from_unique_id(ctran.create_unique_id(), 0, 1)  # one-time setup
    before = _fds_and_threads()
    for _ in range(30):
        boot = ctran.Bootstrap.from_unique_id(ctran.create_unique_id(), 0, 1)
        boot.barrier()
        del boot
        with pytest.raises(ctran.InvalidArgumentError):
            ctran.Bootstrap.from_unique_id(ctran.create_unique_id(), 5, 2)
    fds, threads = _fds_and_threads()
    assert fds <= before[0] + 2 and threads <= before[1] + 2, (before, (fds, threads))
