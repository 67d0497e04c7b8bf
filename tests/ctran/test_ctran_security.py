"""Strangers against a running job: the store and the tcp transport refuse or time out every
connection that does not open with the job's handshake (magic, protocol version, secret), log
why, and the job carries on unaffected. Plus the store's value cap."""

from __future__ import annotations

import os
import re
import socket
import struct
import threading
import time

import checks
import ctran_helpers
import pytest

import ctran
from launcher import launch

MAGIC = b"RCCLXHLO"
VERSION = 2
STORE, TRANSPORT = 1, 2
# The server's verdicts (handshake.cpp).
ACCEPTED, OLD_VERSION, WRONG_SECRET, WRONG_CHANNEL = 0, 1, 2, 3
HANDSHAKE_TIMEOUT_MS = 600


def _hello(version=VERSION, channel=STORE, rank=-1, secret=bytes(16)) -> bytes:
    return MAGIC + struct.pack("<IIiI", version, channel, rank, 0) + secret


def _knock(addr: tuple[str, int], data: bytes, timeout: float = 5.0):
    """Sends `data` on a new connection; returns the server's verdict, or "closed" when it hung
    up without one."""
    with socket.create_connection(addr, timeout=timeout) as s:
        s.sendall(data)
        answer = b""
        while len(answer) < 16:
            try:
                chunk = s.recv(16 - len(answer))
            except ConnectionResetError:  # closed with some of `data` unread
                chunk = b""
            if not chunk:
                return "closed" if not answer else f"short answer {answer!r}"
            answer += chunk
    assert answer[:8] == MAGIC, answer
    version, verdict = struct.unpack("<II", answer[8:])
    assert version == VERSION
    return verdict


def _silent(addr: tuple[str, int]) -> socket.socket:
    """A connection that says nothing (half open from the server's point of view)."""
    s = socket.create_connection(addr, timeout=10)
    s.sendall(MAGIC[:3])  # a start, never finished
    return s


def _hung_up(s: socket.socket) -> bool:
    """True when the server has closed `s` (a reset: it closed with bytes of ours unread)."""
    try:
        return s.recv(16) == b""
    except ConnectionResetError:
        return True


def _closed_after(s: socket.socket) -> float:
    """Seconds until the server closes `s` (blocks up to the socket's timeout)."""
    start = time.monotonic()
    try:
        assert _hung_up(s)
    finally:
        s.close()
    return time.monotonic() - start


def _quick_attacks(addr, channel: int, secret: bytes) -> dict:
    """Strangers that are refused at once: garbage, an old version, a wrong secret, and a
    client of the job (it has the `secret`) knocking on the other channel's door."""
    other = STORE + TRANSPORT - channel
    return {
        "garbage": _knock(addr, os.urandom(64)),
        "old_version": _knock(addr, _hello(version=0, channel=channel)),
        "wrong_secret": _knock(addr, _hello(channel=channel, secret=os.urandom(16))),
        "wrong_channel": _knock(addr, _hello(channel=other, secret=secret)),
    }


def _attacks(addr, channel: int, secret: bytes) -> dict:
    """The quick strangers, then one that starts a hello and falls silent."""
    seen = _quick_attacks(addr, channel, secret)
    seen["silent_closed_after_s"] = _closed_after(_silent(addr))
    return seen


def _expect_refusals(seen: dict):
    assert seen["garbage"] == "closed"
    assert seen["old_version"] == OLD_VERSION
    assert seen["wrong_secret"] == WRONG_SECRET
    assert seen["wrong_channel"] == WRONG_CHANNEL
    if "silent_closed_after_s" in seen:
        assert HANDSHAKE_TIMEOUT_MS / 1000 * 0.8 < seen["silent_closed_after_s"] < 5


def _expect_logged(log: str, server: str):
    assert re.search(f"{server}: refused a connection from .*: bad magic", log), log
    assert re.search(
        f"{server}: refused a connection from .*: protocol version 0 \\(client\\) vs 2", log
    ), log
    assert re.search(f"{server}: refused a connection from .*: wrong job secret", log), log
    assert re.search(f"{server}: refused a connection from .*: wrong channel", log), log
    assert re.search(
        f"{server}: refused a connection from .*: timed out after {HANDSHAKE_TIMEOUT_MS} ms "
        "waiting for a complete handshake \\(RCCLX_HANDSHAKE_TIMEOUT_MS\\)",
        log,
    ), log


# --- the store ------------------------------------------------------------------------------


def _store_job(ctx, uid: bytes, rounds: int):
    import ctran

    boot = ctran.Bootstrap.from_unique_id(uid, ctx.rank, ctx.nranks)
    bad = []
    for k in range(rounds):
        got = boot.all_gather(b"%d:%d" % (ctx.rank, k))
        if got != [b"%d:%d" % (r, k) for r in range(ctx.nranks)]:
            bad.append((k, got))
        boot.barrier()
    return bad


def test_store_refuses_strangers_while_a_job_runs(monkeypatch, capfd):
    # The server lives in this process (the unique id's creator), so its log is this stderr.
    monkeypatch.setenv("RCCLX_HANDSHAKE_TIMEOUT_MS", str(HANDSHAKE_TIMEOUT_MS))
    uid = ctran.create_unique_id()
    host, port = ctran.describe_unique_id(uid).rsplit(":", 1)
    addr = (host, int(port))
    # One stranger falls silent as the job starts: it must hold up no one, and is dropped at
    # its handshake deadline; the others knock again and again while the job runs.
    lingering = _silent(addr)
    secret = ctran.unique_id_secret(uid)
    seen, stop = [_attacks(addr, STORE, secret)], threading.Event()

    def attack():
        while not stop.is_set():
            seen.append(_quick_attacks(addr, STORE, secret))

    attacker = threading.Thread(target=attack)
    attacker.start()
    try:
        results = launch(_store_job, 3, uid, 40, env={"RCCLX_TIMEOUT_MS": 15000}, timeout=30)
    finally:
        stop.set()
        attacker.join()
    assert [r.value for r in results] == [[], [], []]
    assert len(seen) > 3, "the attacks did not overlap the job"
    for s in seen:
        _expect_refusals(s)
    assert _closed_after(lingering) < 5
    # Clients of this library get a clear error; the job's store goes on serving.
    with pytest.raises(ctran.RemoteError, match=r"store server .* wrong job secret"):
        ctran.TcpStore(host, int(port), timeout_ms=2000, secret=os.urandom(16))
    good = ctran.TcpStore(host, int(port), timeout_ms=2000, secret=ctran.unique_id_secret(uid))
    good.set("still", b"serving")
    assert good.get("still", timeout_ms=1000) == b"serving"
    log = capfd.readouterr().err
    _expect_logged(log, "tcp store")
    assert ctran.unique_id_secret(uid).hex() not in log


def test_store_value_cap(monkeypatch):
    monkeypatch.setenv("RCCLX_STORE_MAX_VALUE_BYTES", "1K")
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    client = ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000)
    client.set("fits", b"x" * 1024)
    with pytest.raises(ctran.InvalidArgumentError, match="RCCLX_STORE_MAX_VALUE_BYTES=1024"):
        client.set("too_big", b"x" * 1025)
    # Refused before sending: the connection is still in step.
    assert client.get("fits", timeout_ms=1000) == b"x" * 1024


def test_store_server_drops_an_oversized_request_and_serves_on(monkeypatch, capfd):
    monkeypatch.setenv("RCCLX_STORE_MAX_VALUE_BYTES", "1K")
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    addr = ("127.0.0.1", server.port)
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(_hello())
        assert s.recv(16)[12:] == struct.pack("<I", ACCEPTED)
        # A set claiming 1 GiB: refused from its header, nothing allocated; then an add, which
        # must carry exactly 8 bytes.
        s.sendall(struct.pack("<BI", 1, 1) + b"k" + struct.pack("<Q", 1 << 30))
        assert _hung_up(s)
    with socket.create_connection(addr, timeout=5) as s:
        s.sendall(_hello())
        assert s.recv(16)[12:] == struct.pack("<I", ACCEPTED)
        s.sendall(struct.pack("<BI", 3, 1) + b"k" + struct.pack("<Q", 4) + b"abcd")
        assert _hung_up(s)
    client = ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000)
    assert client.add("n", 2) == 2
    log = capfd.readouterr().err
    assert re.search(
        r"dropped client .*, which sent a value of 1073741824 bytes for request 1 on key 'k' "
        r"\(at most RCCLX_STORE_MAX_VALUE_BYTES=1024\)",
        log,
    ), log
    assert "a value of 4 bytes for request 3 on key 'k' (not a length it carries)" in log, log


def test_listens_on_the_named_interface_only():
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    other = [a for a in _local_ipv4_addresses() if not a.startswith("127.")]
    if not other:
        pytest.skip("this host has no non-loopback IPv4 address")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((other[0], server.port), timeout=2).close()


def test_listen_addr_knob_widens(monkeypatch):
    monkeypatch.setenv("RCCLX_LISTEN_ADDR", "0.0.0.0")
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    for a in _local_ipv4_addresses():
        socket.create_connection((a, server.port), timeout=2).close()


def _local_ipv4_addresses() -> list[str]:
    import subprocess

    try:
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    return ["127.0.0.1"] + [a for a in out.split() if re.fullmatch(r"[0-9.]+", a)]


def test_job_secret_knob_is_checked(monkeypatch):
    monkeypatch.setenv("RCCLX_JOB_SECRET", "not-hex")
    with pytest.raises(ctran.InvalidArgumentError, match="RCCLX_JOB_SECRET must be 32 hex") as e:
        ctran.TcpStoreServer(0, "127.0.0.1")
    assert "not-hex" not in str(e.value)
    monkeypatch.setenv("RCCLX_JOB_SECRET", "ab" * 16)
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000).set("k", b"v")
    monkeypatch.delenv("RCCLX_JOB_SECRET")
    with pytest.raises(ctran.RemoteError, match="wrong job secret"):
        ctran.TcpStore("127.0.0.1", server.port, timeout_ms=2000)


# --- the tcp transport ----------------------------------------------------------------------


class _AttackingStore(ctran_helpers.ForwardingStore):
    """Rank 0's store: when it reads rank 1's tcp address (gathered while rank 1 listens), it
    first sends the strangers there, and leaves one silent connection open while the group
    connects."""

    ADDRESS = re.compile(rb"([0-9.]+):([0-9]+)")

    def __init__(self, inner):
        super().__init__(inner)
        self.seen = None
        self.lingering = None

    def get(self, key):
        value = super().get(key)
        m = self.ADDRESS.fullmatch(value)
        if m and self.seen is None and key.endswith("/1"):
            addr = (m.group(1).decode(), int(m.group(2)))
            # The secret rank 0 drew for the group, as a rank of the group knows it.
            secret = self.inner.get("secure/job_secret")
            self.seen = _attacks(addr, TRANSPORT, secret)
            self.lingering = _silent(addr)
        return value


def _transport_job(ctx):
    import sys
    import tempfile

    import ctran_helpers

    import ctran

    # Rank 1's warnings, for the test to read.
    log = tempfile.TemporaryFile(mode="w+")
    os.dup2(log.fileno(), 2)
    sys.stderr = log
    store = _AttackingStore(ctx.store()) if ctx.rank == 0 else ctx.store()
    group = ctran.PeerGroup.from_store(store, ctx.rank, ctx.nranks, prefix="secure")
    problems = ctran_helpers.exercise_window(group, rounds=20, seq_signals=50)
    group.destroy()
    log.seek(0)
    out = {"problems": problems, "log": log.read()}
    if ctx.rank == 0:
        out["seen"] = store.seen
        out["lingering_closed_after_s"] = _closed_after(store.lingering)
    return out


def test_transport_refuses_strangers_while_the_group_connects():
    env = {"RCCLX_TRANSPORT": "tcp", "RCCLX_HANDSHAKE_TIMEOUT_MS": HANDSHAKE_TIMEOUT_MS}
    r0, r1 = (r.value for r in launch(_transport_job, 2, env=env, timeout=30))
    assert r0["problems"] == [] and r1["problems"] == []
    assert r0["seen"] is not None, "rank 1's tcp address was never read"
    _expect_refusals(r0["seen"])
    # The group completed while a stranger's handshake was pending: it is dropped then, at the
    # latest (the listener closes with the group's setup).
    assert r0["lingering_closed_after_s"] < 5
    _expect_logged(r1["log"], "tcp transport")


def test_pending_handshakes_are_bounded(monkeypatch):
    # Two silent strangers take both handshake slots: the next client waits in the kernel's
    # queue until one of them times out, then is served.
    monkeypatch.setenv("RCCLX_MAX_PENDING_CONNECTIONS", "2")
    monkeypatch.setenv("RCCLX_HANDSHAKE_TIMEOUT_MS", str(HANDSHAKE_TIMEOUT_MS))
    server = ctran.TcpStoreServer(0, "127.0.0.1")
    addr = ("127.0.0.1", server.port)
    silent = [_silent(addr) for _ in range(2)]
    time.sleep(0.1)
    start = time.monotonic()
    client = ctran.TcpStore("127.0.0.1", server.port, timeout_ms=5000)
    waited = time.monotonic() - start
    client.set("k", b"v")
    assert HANDSHAKE_TIMEOUT_MS / 1000 * 0.5 < waited < 3, waited
    for s in silent:
        assert _closed_after(s) < 1


# --- where the secret comes from ------------------------------------------------------------


def _env_job_with_secret(ctx):
    import ctran

    boot = ctran.Bootstrap.from_env()
    out = {"gathered": boot.all_gather(b"%d" % ctx.rank)}
    if ctx.rank == ctx.nranks - 1:
        port = int(os.environ["MASTER_PORT"]) + 1
        try:
            ctran.TcpStore("127.0.0.1", port, timeout_ms=2000, secret=os.urandom(16))
            out["stranger"] = "admitted"
        except ctran.RemoteError as e:
            out["stranger"] = str(e)
        # The knob's secret, as every rank has it.
        assert ctran.TcpStore("127.0.0.1", port, timeout_ms=2000).check(["join/0"])
    boot.barrier()
    return out


def test_env_bootstrap_uses_the_job_secret_knob():
    port = checks.free_port_run(2)
    env = {"WORLD_SIZE": 2, "RCCLX_JOB_SECRET": os.urandom(16).hex(), "RCCLX_TIMEOUT_MS": 15000}
    results = [
        r.value
        for r in launch(
            _env_job_with_secret,
            2,
            env=env,
            rank_env=lambda r: {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port, "RANK": r},
            timeout=30,
        )
    ]
    assert results[0]["gathered"] == results[1]["gathered"] == [b"0", b"1"]
    assert "wrong job secret" in results[1]["stranger"], results[1]["stranger"]


def test_unique_id_of_the_layout_without_a_secret_is_refused_by_name():
    uid = bytearray(ctran.create_unique_id())
    uid[:8] = b"RCCLXID1"
    with pytest.raises(ctran.InvalidArgumentError, match="older RCCLX .*without a job secret"):
        ctran.describe_unique_id(bytes(uid))
