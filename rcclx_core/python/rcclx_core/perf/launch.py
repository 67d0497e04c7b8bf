"""Starting the ranks: N local processes of our own, or this process as one rank of torchrun.

Local processes are forked from a multiprocessing fork server (a clean process with numpy,
ctran, rcclx_core and, for GPU runs and ``--compare``, torch already imported, but CUDA never
initialised: each rank initialises it for itself), so ranks start in milliseconds. The parent
hosts a ctran TcpStoreServer; with ``--hosts H`` rank r sets RCCLX_HOST_ID to pretend host
r * H // N before it joins, so ranks on other pretend hosts talk over tcp. Rank 0 creates the
communicator's unique id and publishes it there, and every rank uses the same store for the
run's statistics. On GPUs rank r uses GPU r % GPUs (under torchrun: LOCAL_RANK % GPUs); every
rank turns NVLink multicast off first.
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

import numpy as np

import ctran
import rcclx_core
from rcclx_core.perf import device, runner
from rcclx_core.perf.report import EXIT_TARGETS_NOT_MET, Report
from rcclx_core.perf.spec import Config, UsageError

EXIT_WRONG, EXIT_USAGE, EXIT_RANK_FAILED = 1, 2, 3  # a rank raised or died: 3
_CLEAN = (0, EXIT_WRONG, EXIT_USAGE, EXIT_TARGETS_NOT_MET)  # a rank's own verdicts
_FAILURE_GRACE_S = 10.0  # how long the other ranks may take to notice a failed rank
_DIST_TIMEOUT = datetime.timedelta(seconds=120)
_CONTROL_PREFIX = "rcclx-perf/control/"
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def under_torchrun() -> bool:
    return all(v in os.environ for v in _TORCHRUN_VARS)


def _run_rank(cfg: Config, world: runner.World, target_list: list) -> int:
    report = None
    if world.rank == 0:
        report = Report(
            cfg, world.nranks, world.description, target_list=target_list, sharing=world.gpu_sharing
        )
        report.header()
    code = runner.run(cfg, world, report)
    if report is not None:
        code = code or report.finish()
    return code


def _dist_init(rank: int, nranks: int, file_store: str | None, gpu: int | None, backend: str):
    """Joins torch.distributed (for the peers) with ``backend``, gloo or nccl."""
    import torch
    import torch.distributed as dist

    store = dist.FileStore(file_store, nranks) if file_store else None
    kwargs = {"device_id": torch.device("cuda", gpu)} if backend == "nccl" else {}
    dist.init_process_group(
        backend,
        init_method=None if file_store else "env://",
        store=store,
        rank=rank,
        world_size=nranks,
        timeout=_DIST_TIMEOUT,
        **kwargs,
    )


def _set_gpu(cfg: Config, gpu: int) -> int | None:
    """Makes ``gpu`` this process's current GPU (GPU runs); None on host memory."""
    if cfg.device != "cuda":
        return None
    import torch

    torch.cuda.set_device(gpu)
    return gpu


def _usage_failure(rank: int, e: UsageError) -> int:
    if rank == 0:
        sys.stderr.write(f"rcclx-perf: error: {e}\n")
    return EXIT_USAGE


def _local_rank(
    cfg: Config, rank: int, nranks: int, port: int, tmpdir: str, ngpus: int, target_list: list
) -> None:
    """The body of one local rank process; its exit code is the rank's result."""
    device.disable_multicast()
    if cfg.hosts > 1:  # before the communicator reads the host identity
        os.environ["RCCLX_HOST_ID"] = f"rcclx-perf-host-{rank * cfg.hosts // nranks}"
    try:
        gpu = _set_gpu(cfg, device.gpu_for_rank(rank, ngpus))
        store = ctran.TcpStore("127.0.0.1", port)
        if rank == 0:
            uid = rcclx_core.create_unique_id()
            store.set("rcclx-perf/unique_id", uid)
        else:
            uid = store.get("rcclx-perf/unique_id")
        gpus_shared = cfg.device == "cuda" and nranks > ngpus
        where = f" on {ngpus} GPUs, rank r on GPU r % {ngpus}" if cfg.device == "cuda" else ""
        if cfg.hosts > 1:
            where += f" on {cfg.hosts} pretend hosts (RCCLX_HOST_ID)"
        comm = rcclx_core.Communicator.from_unique_id(uid, rank, nranks, device=gpu)
        world = runner.World(
            rank,
            nranks,
            comm,
            ctran.Bootstrap.from_store(store, rank, nranks, _CONTROL_PREFIX),
            functools.partial(_dist_init, rank, nranks, os.path.join(tmpdir, "dist_store"), gpu),
            "local processes" + where,
            gpu,
            gpus_shared,
            device.sharing(comm) if gpus_shared else "",
        )
        code = _run_rank(cfg, world, target_list)
    except UsageError as e:
        code = _usage_failure(rank, e)
    except BaseException:  # noqa: BLE001 - reported, and turned into the exit code
        sys.stderr.write(f"rcclx-perf: rank {rank} failed:\n{traceback.format_exc()}")
        code = EXIT_RANK_FAILED
    sys.stdout.flush()
    sys.exit(code)


def combine_exit_codes(codes: list[int]) -> int:
    """The run's exit status from its ranks': a failed rank (3), else a bad command line found
    by the ranks (2), else wrong values (1), else a target not met (4, --strict-targets), 0."""
    if any(c not in _CLEAN for c in codes):
        return EXIT_RANK_FAILED
    for code in (EXIT_USAGE, EXIT_WRONG, EXIT_TARGETS_NOT_MET):
        if code in codes:
            return code
    return 0


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
            finished = (0, EXIT_WRONG, EXIT_TARGETS_NOT_MET)  # the others still run on
            if p.exitcode not in finished and deadline is None:
                deadline = time.monotonic() + _FAILURE_GRACE_S
        if not ready and deadline is not None:
            for p in alive.values():
                sys.stderr.write(
                    f"rcclx-perf: killing {p.name}, still running after a rank failed\n"
                )
                p.kill()
                p.join()
            alive = {}
    for p in procs:
        if p.exitcode is not None and p.exitcode < 0:
            sys.stderr.write(f"rcclx-perf: {p.name} died of signal {-p.exitcode}\n")
    return combine_exit_codes([p.exitcode for p in procs])


def _preload(cfg: Config) -> list[str]:
    """What the fork server imports once for every rank: never anything that touches CUDA."""
    modules = ["numpy", "ctran", "rcclx_core", "rcclx_core.perf.runner"]
    if cfg.device == "cuda" or cfg.compare:
        modules += ["torch", "torch.distributed", "rcclx_core.perf.peers.dist"]
    return modules


def launch_local(cfg: Config, nranks: int, ngpus: int = 0, target_list: list | None = None) -> int:
    """Runs ``nranks`` rank processes on this host; returns the run's exit code."""
    device.disable_multicast()  # the fork server inherits it, and so every rank
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(_preload(cfg))
    server = ctran.TcpStoreServer(0)
    with tempfile.TemporaryDirectory(prefix="rcclx-perf-") as tmpdir:
        procs = [
            ctx.Process(
                target=_local_rank,
                args=(cfg, r, nranks, server.port, tmpdir, ngpus, target_list or []),
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


def run_torchrun(cfg: Config, ngpus: int = 0, target_list: list | None = None) -> int:
    """Runs this process as rank RANK of WORLD_SIZE (torchrun's environment); rank 0 prints.

    The communicator bootstraps from the environment (on a store rank 0 announces through
    torchrun's, or on RCCLX_BOOTSTRAP_PORT); the statistics use a store that rank 0 hosts on a
    free port it broadcasts over the communicator (or on RCCLX_PERF_PORT); torch.distributed
    (the peers) uses torchrun's own store at MASTER_PORT. On GPUs this rank uses GPU
    LOCAL_RANK % GPUs.
    """
    device.disable_multicast()
    rank, nranks = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host = os.environ["MASTER_ADDR"]
    gpu_index, gpus_shared = device.torchrun_gpu(ngpus)
    gpu = _set_gpu(cfg, gpu_index)
    comm = rcclx_core.Communicator.from_env(device=gpu)
    # A fixed port next to torchrun's may be taken (another job's store answers it then).
    fixed = int(os.environ.get("RCCLX_PERF_PORT") or 0)
    server = ctran.TcpStoreServer(fixed, host) if rank == 0 else None
    port = np.array([server.port if server is not None else 0], dtype=np.int64)
    if not fixed:
        comm.broadcast(port.copy(), port, root=0)
    store = ctran.TcpStore(host, int(port[0]) or fixed)
    world = runner.World(
        rank,
        nranks,
        comm,
        ctran.Bootstrap.from_store(store, rank, nranks, _CONTROL_PREFIX),
        functools.partial(_dist_init, rank, nranks, None, gpu),
        "torchrun" + (f", GPU LOCAL_RANK % {ngpus}" if gpu is not None else ""),
        gpu,
        gpus_shared and gpu is not None,
        device.sharing(comm) if gpus_shared and gpu is not None else "",
    )
    try:
        return _run_rank(cfg, world, target_list or [])
    except UsageError as e:
        return _usage_failure(rank, e)
    finally:
        _leave_store(store, nranks, server)
        del server


_LEFT_KEY = "rcclx-perf/left"


def _leave_store(store, nranks: int, server) -> None:
    """Every rank says it is done with the statistics' store; rank 0, which serves it, stops
    serving only once all have (or a rank failed to within the grace period): a rank still
    reading the final barrier's result when the server went away would fail on it."""
    try:
        store.add(_LEFT_KEY, 1)
    except ctran.Error:
        return  # the server is gone already: nothing left to wait for
    if server is None:
        return
    deadline = time.monotonic() + _FAILURE_GRACE_S
    while store.add(_LEFT_KEY, 0) < nranks and time.monotonic() < deadline:
        time.sleep(0.005)
