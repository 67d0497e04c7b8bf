"""Runs a command as the ranks of a job on this machine, as torchrun would: every rank gets
RANK, LOCAL_RANK, WORLD_SIZE and an env:// rendezvous (MASTER_ADDR / MASTER_PORT on a free
loopback port). The benchmarks and measurement scripts start their own ranks through this."""

from __future__ import annotations

import os
import shlex
import subprocess

from rcclx_core._testing import free_port_run


def free_port() -> int:
    """MASTER_PORT for ranks started here: it and the bootstrap store's port after it free,
    outside the kernel's ephemeral range."""
    return free_port_run(2)


def run_local_ranks(command: list[str], nranks: int) -> int:
    """Runs `command` once per rank, waits for all, and returns 0 or the first non-zero exit
    status (a rank's failure does not stop the others: they raise at their own timeout)."""
    if nranks < 1:
        raise ValueError(f"run_local_ranks: nranks must be at least 1, got {nranks}")
    port = str(free_port())
    procs = []
    for r in range(nranks):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(nranks))
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
        procs.append(subprocess.Popen(command, env=env))
    codes = [p.wait() for p in procs]
    failed = [c for c in codes if c]
    if failed:
        print(f"ranks exited with {codes}: {shlex.join(command)}")
    return failed[0] if failed else 0
