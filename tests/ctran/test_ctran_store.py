"""Stores in one process: MemoryStore, FileStore, TcpStore/TcpStoreServer, PythonStore."""

import os
import threading
import time

import checks
import ctran_helpers
import pytest

import ctran

STORE_KINDS = ["memory", "file", "tcp", "python"]


@pytest.fixture(params=STORE_KINDS)
def connect(request, tmp_path):
    """A function returning a new handle (client) to one shared store of each kind."""
    if request.param == "memory":
        shared = ctran.MemoryStore()
        yield lambda: shared
    elif request.param == "file":
        yield lambda: ctran.FileStore(str(tmp_path / "store"))
    elif request.param == "tcp":
        server = ctran.TcpStoreServer()
        yield lambda: ctran.TcpStore("127.0.0.1", server.port, timeout_ms=5000)
        del server
    else:
        forwarding = ctran_helpers.ForwardingStore(ctran.MemoryStore())
        yield lambda: ctran.PythonStore(forwarding)


@pytest.fixture
def store(connect):
    return connect()


def test_set_get_overwrite(store):
    store.set("plain", b"value")
    assert store.get("plain") == b"value"
    store.set("plain", b"second")
    assert store.get("plain", timeout_ms=1000) == b"second"
    binary = bytes(range(256)) * 3
    store.set("a/b/c key", binary)
    assert store.get("a/b/c key") == binary
    store.set("empty", b"")
    assert store.get("empty") == b""
    big = os.urandom(1 << 20)
    store.set("big", big)
    assert store.get("big") == big


def test_add(store):
    assert store.add("counter", 5) == 5
    assert store.add("counter", 1) == 6
    assert store.add("counter", -10) == -4
    assert store.add("other", 0) == 0
    assert store.check(["other"])


def test_check_and_delete_key(store):
    assert not store.check(["x"])
    store.set("x", b"1")
    assert store.check(["x"])
    assert not store.check(["x", "y"])
    store.set("y", b"2")
    assert store.check(["x", "y"])
    assert store.delete_key("x") is True
    assert store.delete_key("x") is False
    assert not store.check(["x"])
    assert store.get("y") == b"2"


def test_get_times_out_quickly_and_store_stays_usable(store):
    start = time.monotonic()
    with pytest.raises(ctran.TimeoutError) as info:
        store.get("never-set", timeout_ms=200)
    elapsed = time.monotonic() - start
    assert 0.15 <= elapsed < 2.0
    assert "never-set" in str(info.value)
    # The error is also a RemoteError, a ctran.Error and Python's TimeoutError.
    assert isinstance(info.value, ctran.RemoteError)
    assert isinstance(info.value, ctran.Error)
    assert isinstance(info.value, TimeoutError)
    store.set("after", b"ok")
    assert store.get("after") == b"ok"


def test_get_waits_for_a_later_set(store, connect):
    other = connect()  # a TcpStore client serves one call at a time: set through another

    def set_later():
        time.sleep(0.1)
        other.set("late", b"arrived")

    setter = threading.Thread(target=set_later)
    start = time.monotonic()
    setter.start()
    try:
        assert store.get("late", timeout_ms=10000) == b"arrived"
    finally:
        setter.join()
    assert time.monotonic() - start >= 0.08


def test_concurrent_adds_are_atomic(store, connect):
    threads, per_thread = 4, 50

    def bump():
        mine = connect()
        for _ in range(per_thread):
            mine.add("shared", 1)
            store.add("shared", 1)

    workers = [threading.Thread(target=bump) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert store.add("shared", 0) == 2 * threads * per_thread


def test_memory_stores_are_separate():
    first, second = ctran.MemoryStore(), ctran.MemoryStore()
    first.set("k", b"1")
    assert not second.check(["k"])


def test_file_stores_share_a_directory(tmp_path):
    directory = str(tmp_path / "shared")
    writer, reader = ctran.FileStore(directory), ctran.FileStore(directory)
    assert reader.directory == directory
    writer.set("job/rank/0", b"addr")
    assert reader.get("job/rank/0", timeout_ms=1000) == b"addr"
    assert writer.add("n", 2) == 2 and reader.add("n", 3) == 5
    # Keys with '/' are files in the directory itself, not subdirectories.
    assert all(entry.is_file() for entry in (tmp_path / "shared").iterdir())


def test_tcp_clients_share_one_server():
    server = ctran.TcpStoreServer(0)
    assert 0 < server.port < 65536
    first = ctran.TcpStore("127.0.0.1", server.port)
    second = ctran.TcpStore("localhost", server.port, timeout_ms=2000)
    first.set("k", b"from first")
    assert second.get("k") == b"from first"
    assert first.add("n", 1) == 1 and second.add("n", 1) == 2

    # A get blocked on one client is answered when another client sets the key.
    result = []
    waiter = threading.Thread(target=lambda: result.append(second.get("later", timeout_ms=10000)))
    waiter.start()
    time.sleep(0.05)
    first.set("later", b"now")
    waiter.join()
    assert result == [b"now"]


def test_tcp_server_on_a_chosen_port():
    port = checks.free_port_run(1)
    server = ctran.TcpStoreServer(port)
    assert server.port == port
    client = ctran.TcpStore("127.0.0.1", port, timeout_ms=2000)
    client.set("k", b"v")
    assert client.get("k") == b"v"


def _time_wait_ports_towards(port: int) -> set[int]:
    """Local ports of this machine's connections to 127.0.0.1:port that are in TIME_WAIT."""
    ports = set()
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            local, remote, state = line.split()[1:4]
            if state == "06" and remote == f"0100007F:{port:04X}":
                ports.add(int(local.split(":")[1], 16))
    return ports


def test_a_port_a_closed_client_left_in_time_wait_can_still_host_a_store():
    # Clients close first, so their ports wait out TIME_WAIT; that must not keep a store (on
    # MASTER_PORT + 1, say) from listening there.
    server = ctran.TcpStoreServer(0)
    client = ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000)
    client.set("k", b"v")
    del client
    deadline = time.monotonic() + 5
    while not (left := _time_wait_ports_towards(server.port)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert left, "the client's connection did not enter TIME_WAIT"
    port = left.pop()
    reused = ctran.TcpStoreServer(port)
    assert reused.port == port


def test_tcp_connect_to_nothing_times_out():
    port = checks.free_port_run(1)
    start = time.monotonic()
    with pytest.raises(ctran.TimeoutError) as info:
        ctran.TcpStore("127.0.0.1", port, timeout_ms=200)
    assert time.monotonic() - start < 2.0
    assert str(port) in str(info.value)


def test_tcp_store_reports_a_stopped_server():
    server = ctran.TcpStoreServer()
    client = ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000)
    client.set("k", b"v")
    port = server.port
    del server
    with pytest.raises(ctran.RemoteError) as info:
        client.get("k", timeout_ms=1000)
        client.set("k2", b"v")  # a reply may still have been buffered: the next call must fail
    assert f":{port}" in str(info.value)


def _get_in_thread(client, key):
    """Starts client.get(key) in a thread; returns the thread and the list its outcome lands in."""
    outcome = []

    def wait():
        try:
            outcome.append(("returned", client.get(key, timeout_ms=20000)))
        except ctran.Error as e:
            outcome.append((type(e).__name__, str(e)))

    waiter = threading.Thread(target=wait)
    waiter.start()
    return waiter, outcome


@pytest.mark.parametrize("timed_out", [True, False], ids=["timeout", "remote"])
def test_a_closing_server_tells_waiting_clients_why_its_host_gave_up(timed_out):
    server = ctran.TcpStoreServer()
    port = server.port
    clients = [ctran.TcpStore("127.0.0.1", port, timeout_ms=2000) for _ in range(2)]
    waits = [_get_in_thread(c, f"never/{i}") for i, c in enumerate(clients)]
    time.sleep(0.2)  # both gets are waiting in the server
    server.leave_farewell("rank 3 did not arrive", timed_out=timed_out)
    start = time.monotonic()
    del server
    for waiter, outcome in waits:
        waiter.join(10)
        assert not waiter.is_alive()
        kind, message = outcome[0]
        assert kind == ("TimeoutError" if timed_out else "RemoteError"), message
        assert message == (
            f"store server 127.0.0.1:{port}: its host gave up first and closed it: "
            "rank 3 did not arrive"
        )
    assert time.monotonic() - start < 5  # told at the close, not at the clients' own deadline


def test_a_server_closing_without_a_farewell_is_a_closed_connection():
    server = ctran.TcpStoreServer()
    port = server.port
    client = ctran.TcpStore("127.0.0.1", port, timeout_ms=2000)
    waiter, outcome = _get_in_thread(client, "never")
    time.sleep(0.2)
    del server
    waiter.join(10)
    assert outcome == [
        ("RemoteError", f"store server 127.0.0.1:{port}: the server closed the connection")
    ]


def test_python_store_forwards_every_method():
    inner = ctran.MemoryStore()
    forwarding = ctran_helpers.ForwardingStore(inner)
    adapted = ctran.PythonStore(forwarding)
    adapted.set("k", b"v")
    assert inner.get("k") == b"v"
    assert adapted.get("k") == b"v"
    assert adapted.add("n", 4) == 4
    assert adapted.check(["k"]) and adapted.delete_key("k")
    assert not inner.check(["k"])
    assert forwarding.calls >= 6


def test_python_store_reports_python_exceptions():
    class Broken:
        def set(self, key, value):
            raise KeyError("disk full")

        get = add = check = delete_key = set

    with pytest.raises(ctran.RemoteError) as info:
        ctran.PythonStore(Broken()).set("k", b"v")
    assert "set" in str(info.value) and "disk full" in str(info.value)
