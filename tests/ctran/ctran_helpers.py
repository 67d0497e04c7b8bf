"""Helpers shared by the ctran tests: /dev/shm listings, stores and a window workout."""

from __future__ import annotations

import functools
import os
import time

import numpy as np
import pytest

SHM_DIR = "/dev/shm"


@functools.cache
def ucx_library() -> tuple[str, str]:
    """ctran.ucx_library(), called in the pytest process when a test asks (never at import: a
    rank imports the test modules too, and a library it loaded before its test's environment
    applies would be the one it keeps)."""
    import ctran

    return ctran.ucx_library()


# Skips a test, saying why, when ctran cannot load libucp.so.0 here (the `ucx` fixture).
needs_ucx = pytest.mark.usefixtures("ucx")


def rcclx_shm_files() -> set[str]:
    """Names of the shared-memory segments RCCLX creates ("rcclx-<job tag>-r<rank>-w<id>")."""
    return {name for name in os.listdir(SHM_DIR) if name.startswith("rcclx-")}


def leftover_shm_files(before: set[str]) -> set[str]:
    """Segments that appeared since `before` and are still there a moment later.

    Other test sessions may be creating windows concurrently; their segments live only for the
    few milliseconds of window creation, so a second look filters them out.
    """
    new = rcclx_shm_files() - before
    if new:
        time.sleep(0.2)
        new &= rcclx_shm_files()
    return new


class ForwardingStore:
    """A pure-Python torch.distributed.Store look-alike that forwards to another store."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    def set(self, key, value):
        self.calls += 1
        self.inner.set(key, value)

    def get(self, key):
        self.calls += 1
        return self.inner.get(key)

    def add(self, key, delta):
        self.calls += 1
        return self.inner.add(key, delta)

    def check(self, keys):
        self.calls += 1
        return self.inner.check(keys)

    def delete_key(self, key):
        self.calls += 1
        return self.inner.delete_key(key)


# Signal slots used by exercise_window.
SLOT_DATA, SLOT_ACK, SLOT_ALL, SLOT_DIRECT, SLOT_SEQ = range(5)
BLOCK_INTS = 64  # ping-pong payload, at the start of the window
CHUNK_INTS = 32 * 1024  # all-to-all: 256 KiB per rank
DIRECT_OFFSET = 4096  # bytes: one int64 slot per writer rank, for direct stores
ALL_OFFSET = 8192  # bytes: where the all-to-all chunks start


def window_bytes(nranks: int) -> int:
    return ALL_OFFSET + nranks * CHUNK_INTS * 8


def exercise_window(group, rounds: int = 100, seq_signals: int = 300) -> list[str]:
    """Runs put / signal / wait and direct-access patterns over one window; returns problems.

    Works over any mix of transports: direct loads and stores are used only towards peers whose
    window is mapped (shm), and the absence of a mapping is checked for tcp and ucx peers.
    """
    rank, nranks = group.rank, group.nranks
    nxt, prv = (rank + 1) % nranks, (rank - 1) % nranks
    problems: list[str] = []
    win = group.create_window(window_bytes(nranks), num_signals=8)
    mine = np.frombuffer(win.buffer, dtype=np.int64)

    # 1. Ring ping-pong reusing one buffer: data is put, then signalled; the receiver checks it
    #    after its wait and acknowledges, and the sender waits for that before overwriting.
    for k in range(rounds):
        if k > 0:
            win.wait_signal(SLOT_ACK, k, from_peer=nxt)
        win.put(nxt, 0, np.full(BLOCK_INTS, k * nranks + rank, dtype=np.int64))
        win.signal(nxt, SLOT_DATA)
        seen = win.wait_signal(SLOT_DATA, k + 1, from_peer=prv)
        if seen < k + 1:
            problems.append(f"round {k}: wait_signal returned {seen} < {k + 1}")
        block = mine[:BLOCK_INTS]
        if not np.all(block == k * nranks + prv):
            problems.append(
                f"round {k}: expected {k * nranks + prv} from rank {prv}, got {block[:4]}"
            )
        win.signal(prv, SLOT_ACK)
    win.wait_signal(SLOT_ACK, rounds, from_peer=nxt)
    if win.read_signal(SLOT_DATA) != rounds or win.read_signal(SLOT_ACK) != rounds:
        problems.append(
            f"ring counters {win.read_signal(SLOT_DATA)}, {win.read_signal(SLOT_ACK)} != {rounds}"
        )

    # 2. All-to-all: every rank (itself included) puts a distinct chunk into every window.
    for peer in range(nranks):
        chunk = np.arange(CHUNK_INTS, dtype=np.int64) + (rank * 1_000_000 + peer * 10_000_000)
        win.put(peer, ALL_OFFSET + rank * CHUNK_INTS * 8, chunk)
        win.signal(peer, SLOT_ALL)
    win.wait_signal(SLOT_ALL, nranks)
    for src in range(nranks):
        got = _chunk(mine, src)
        want = np.arange(CHUNK_INTS, dtype=np.int64) + (src * 1_000_000 + rank * 10_000_000)
        if not np.array_equal(got, want):
            problems.append(f"all-to-all chunk from rank {src} is wrong: {got[:3]}")

    # 3. Signal sequence numbers: many small signals and some with a delta arrive in full.
    for _ in range(seq_signals):
        win.signal(nxt, SLOT_SEQ)
    win.signal(nxt, SLOT_SEQ, 7)
    if win.wait_signal(SLOT_SEQ, seq_signals + 7, from_peer=prv) != seq_signals + 7:
        problems.append(f"sequence slot overshot: {win.read_signal(SLOT_SEQ)}")

    # 4. Direct access: loads of every mapped peer's window, stores into the next rank's.
    group.bootstrap.barrier()  # every rank's all-to-all data is in place
    if win.peer_buffer(rank) is None:
        problems.append("peer_buffer(self) is None")
    for peer in range(nranks):
        kind = group.transport_to(peer)
        view = win.peer_buffer(peer)
        if kind in ("tcp", "ucx"):
            if view is not None:
                problems.append(f"peer_buffer({peer}) over {kind} is not None")
            continue
        theirs = np.frombuffer(view, dtype=np.int64)
        for src in range(nranks):
            want = np.arange(CHUNK_INTS, dtype=np.int64) + (src * 1_000_000 + peer * 10_000_000)
            if not np.array_equal(_chunk(theirs, src), want):
                problems.append(f"direct load of rank {peer}'s chunk from rank {src} is wrong")
    direct_writers = [
        p for p in range(nranks) if group.transport_to(p) == "shm" and (p + 1) % nranks == rank
    ]
    if group.transport_to(nxt) == "shm":
        theirs = np.frombuffer(win.peer_buffer(nxt), dtype=np.int64)
        theirs[DIRECT_OFFSET // 8 + rank] = 424242 + rank
        win.signal(nxt, SLOT_DIRECT)
    if direct_writers:
        win.wait_signal(SLOT_DIRECT, 1, from_peer=prv)
        if mine[DIRECT_OFFSET // 8 + prv] != 424242 + prv:
            problems.append(
                f"direct store from rank {prv} not visible: {mine[DIRECT_OFFSET // 8 + prv]}"
            )

    group.bootstrap.barrier()  # nobody still needs this window
    win.destroy()
    return problems


def _chunk(ints: np.ndarray, src: int) -> np.ndarray:
    start = ALL_OFFSET // 8 + src * CHUNK_INTS
    return ints[start : start + CHUNK_INTS]
