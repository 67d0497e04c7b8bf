"""Ports for ranks started on this machine (tests, benchmarks, launchers of local ranks).

A port taken by binding to port 0 comes from the kernel's ephemeral range, which the kernel
also hands to the local ends of outgoing connections: between the launcher closing its probe
socket and rank 0 listening on the port, some connection can take it, and rank 0 fails with
EADDRINUSE while its peers wait for it. A port outside that range is only ever taken by a
process that asks for that very port.
"""

from __future__ import annotations

import random
import socket

# Ports this process has handed out: never the same one twice.
_given: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    """The range the kernel takes local ports from (Linux's default when it cannot be read)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def free_port_run(count: int = 2) -> int:
    """A port P such that P .. P+count-1 are free now and outside the ephemeral range. The
    default run of two covers MASTER_PORT and the bootstrap store's MASTER_PORT + 1."""
    if count < 1:
        raise ValueError(f"free_port_run: count must be at least 1, got {count}")
    low, high = _ephemeral_range()
    first, last = (10000, low - 1) if low > 12000 else (high + 1, 65535)
    rng = random.Random()
    for _ in range(2000):
        base = rng.randint(first, last - count + 1)
        run = range(base, base + count)
        if any(p in _given for p in run):
            continue
        if all(_free(p) for p in run):
            _given.update(run)
            return base
    raise RuntimeError(f"free_port_run: no run of {count} free ports in {first}..{last}")
