"""Starting the ranks: N local processes of our own, or this process as one rank of torchrun.

Local processes are forked from a multiprocessing fork server (a clean process with numpy,
ctran, rcclx_core and, for ``--compare gloo``, torch already imported), so ranks start in
milliseconds. The parent hosts a ctran TcpStoreServer; rank 0 creates the communicator's unique
id and publishes it there, and every rank uses the same store for the run's statistics.
"""

from __future__ import annotations

import datetime
import functools
import multiprocessing as mp
import multiprocessing.connection
import os
import sys
import tempfile
import time
import traceback

import ctran
import rcclx_core
from rcclx_core.perf import runner
from rcclx_core.perf.report import Report
from rcclx_core.perf.spec import Config

EXIT_RANK_FAILED = 3  # a rank raised or died (1: wrong values, 2: bad command line)
_FAILURE_GRACE_S = 10.0  # how long the other ranks may take to notice a failed rank
_GLOO_TIMEOUT = datetime.timedelta(seconds=120)
_CONTROL_PREFIX = "rcclx-perf/control/"
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def under_torchrun() -> bool:
    return all(v in os.environ for v in _TORCHRUN_VARS)


def _run_rank(cfg: Config, world: runner.World) -> int:
    report = None
    if world.rank == 0:
        report = Report(cfg, world.nranks, world.description)
        report.header()
    code = runner.run(cfg, world, report)
    if report is not None:
        report.finish()
    return code


def _gloo_init(rank: int, nranks: int, file_store: str | None = None) -> None:
    import torch.distributed as dist

    store = dist.FileStore(file_store, nranks) if file_store else None
    init = None if file_store else "env://"
    dist.init_process_group(
        "gloo", init_method=init, store=store, rank=rank, world_size=nranks, timeout=_GLOO_TIMEOUT
    )


def _local_rank(cfg: Config, rank: int, nranks: int, port: int, tmpdir: str) -> None:
    """The body of one local rank process; its exit code is the rank's result."""
    try:
        store = ctran.TcpStore("127.0.0.1", port)
        if rank == 0:
            uid = rcclx_core.create_unique_id()
            store.set("rcclx-perf/unique_id", uid)
        else:
            uid = store.get("rcclx-perf/unique_id")
        world = runner.World(
            rank,
            nranks,
            rcclx_core.Communicator.from_unique_id(uid, rank, nranks),
            ctran.Bootstrap.from_store(store, rank, nranks, _CONTROL_PREFIX),
            functools.partial(_gloo_init, rank, nranks, os.path.join(tmpdir, "gloo_store")),
            "local processes",
        )
        code = _run_rank(cfg, world)
    except BaseException:  # noqa: BLE001 - reported, and turned into the exit code
        sys.stderr.write(f"rcclx-perf: rank {rank} failed:\n{traceback.format_exc()}")
        code = EXIT_RANK_FAILED
    sys.stdout.flush()
    sys.exit(code)


def _wait(procs: list) -> int:
    """Waits for every rank; once one fails, the others get a grace period, then are killed."""
    deadline = None
    alive = {p.sentinel: p for p in procs}
    while alive:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready = multiprocessing.connection.wait(list(alive), timeout)
        for s in ready:
            p = alive.pop(s)
            p.join()
            if p.exitcode not in (0, 1) and deadline is None:
                deadline = time.monotonic() + _FAILURE_GRACE_S
        if not ready and deadline is not None:
            for p in alive.values():
                sys.stderr.write(
                    f"rcclx-perf: killing {p.name}, still running after a rank failed\n"
                )
                p.kill()
                p.join()
            alive = {}
    codes = [p.exitcode for p in procs]
    for p in procs:
        if p.exitcode < 0:
            sys.stderr.write(f"rcclx-perf: {p.name} died of signal {-p.exitcode}\n")
    return EXIT_RANK_FAILED if any(c not in (0, 1) for c in codes) else max(codes)


def launch_local(cfg: Config, nranks: int) -> int:
    """Runs ``nranks`` rank processes on this host; returns the run's exit code."""
    ctx = mp.get_context("forkserver")
    preload = ["numpy", "ctran", "rcclx_core", "rcclx_core.perf.runner"]
    ctx.set_forkserver_preload(preload + (["torch", "rcclx_core.perf.gloo"] if cfg.compare else []))
    server = ctran.TcpStoreServer(0)
    with tempfile.TemporaryDirectory(prefix="rcclx-perf-") as tmpdir:
        procs = [
            ctx.Process(
                target=_local_rank,
                args=(cfg, r, nranks, server.port, tmpdir),
                name=f"rank {r}",
                daemon=True,
            )
            for r in range(nranks)
        ]
        for p in procs:
            p.start()
        try:
            return _wait(procs)
        except KeyboardInterrupt:
            for p in procs:
                p.kill()
                p.join()
            return 130


def run_torchrun(cfg: Config) -> int:
    """Runs this process as rank RANK of WORLD_SIZE (torchrun's environment); rank 0 prints.

    The communicator bootstraps from the environment (MASTER_PORT + 1, or
    RCCLX_BOOTSTRAP_PORT); the statistics use a store that rank 0 hosts on the port after that
    one (or RCCLX_PERF_PORT); gloo uses torchrun's own store at MASTER_PORT.
    """
    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host, master_port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    bootstrap_port = int(os.environ.get("RCCLX_BOOTSTRAP_PORT") or 0) or master_port + 1
    port = int(os.environ.get("RCCLX_PERF_PORT") or 0) or bootstrap_port + 1
    comm = rcclx_core.Communicator.from_env()
    server = ctran.TcpStoreServer(port) if rank == 0 else None
    store = ctran.TcpStore(host, port)
    world = runner.World(
        rank,
        nranks,
        comm,
        ctran.Bootstrap.from_store(store, rank, nranks, _CONTROL_PREFIX),
        functools.partial(_gloo_init, rank, nranks),
        "torchrun",
    )
    try:
        return _run_rank(cfg, world)
    finally:
        del server  # after the final barrier: no rank needs the store any more
