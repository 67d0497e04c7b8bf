"""Runs a function as N real processes on this host and gathers results and exceptions.

Each rank is a process forked from a clean fork server (no threads, modules preloaded, CUDA
never initialised in it), so a launch costs milliseconds, not an interpreter start. Ranks meet
through a TCP store that the launching process hosts for the duration of one launch. On a
machine with GPUs rank r runs on GPU r % (number of GPUs): more ranks than GPUs share them (the
processes time-slice a GPU). `run_threads` runs ranks as threads of this process instead
(several ranks in one process, as one process driving several GPUs).

NVLink multicast stays off in every rank (MULTICAST_OFF): the machines these tests run on
require it.
"""

from __future__ import annotations

import dataclasses
import faulthandler
import functools
import multiprocessing as mp
import os
import signal
import time
import traceback
from collections.abc import Sequence
from typing import Any, Callable

# Set in every rank's environment (forked and threaded ranks alike), before the rank's function
# runs: NCCL, torch's symmetric memory and NVSHMEM leave NVLink multicast alone.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

# A rank still running at the launch's deadline is sent this signal first: every rank prints
# all its threads' Python stacks on it (stack_dump_on_signal), so a hang's report says where.
STACK_DUMP_SIGNAL = signal.SIGUSR1
STACK_DUMP_GRACE_S = 1.0


def stack_dump_on_signal() -> None:
    """Called in a rank before its function: STACK_DUMP_SIGNAL prints every thread's stack."""
    faulthandler.enable()
    faulthandler.register(STACK_DUMP_SIGNAL, all_threads=True)


def dump_stacks(pids) -> None:
    """Asks the ranks `pids` (still running) for their stacks; returns once they had time."""
    for pid in pids:
        try:
            os.kill(pid, STACK_DUMP_SIGNAL)
        except ProcessLookupError:
            pass
    if pids:
        time.sleep(STACK_DUMP_GRACE_S)


_PRELOAD = ["numpy", "ctran", "rcclx_core"]
_CONTEXT = None


def preload(*modules: str) -> None:
    """Has the fork server import `modules` once (those installed), instead of every rank of
    every launch. Takes effect if called before the first launch starts the server (conftest
    files); the modules must not initialise CUDA when imported (the server forks every rank)."""
    _PRELOAD.extend(m for m in modules if m not in _PRELOAD)


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        ctx = mp.get_context("forkserver")  # started by exec: a fresh interpreter, no CUDA
        ctx.set_forkserver_preload([m for m in _PRELOAD if _importable(m)])
        _CONTEXT = ctx
    return _CONTEXT


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@functools.cache
def gpu_count() -> int:
    """GPUs this process sees (0 without a GPU build or a driver); asked once."""
    import ctran

    return ctran.cuda_device_count()[0]


@dataclasses.dataclass
class RankContext:
    """What a rank function receives: its rank, the world size, its GPU (rank % GPUs; None on a
    machine without one) and the launch's store."""

    rank: int
    nranks: int
    store_host: str
    store_port: int
    device: int | None = None

    def store(self):
        import ctran

        return ctran.TcpStore(self.store_host, self.store_port)

    def unique_id(self) -> bytes:
        """Rank 0 creates a unique id and shares it through the launch's store."""
        store = self.store()
        if self.rank == 0:
            uid = _create_unique_id()
            store.set("launcher/unique_id", uid)
            return uid
        return store.get("launcher/unique_id")

    def communicator(self):
        """An rcclx communicator of this launch's ranks on this rank's GPU."""
        import rcclx_core

        if self.device is None:
            raise RuntimeError("communicator(): this machine has no GPU for the rank")
        uid = self.unique_id()
        return rcclx_core.Communicator.from_unique_id(
            uid, self.rank, self.nranks, device=self.device
        )

    def init_torch_distributed(self, backend: str = "nccl"):
        """Joins torch.distributed as this rank of the launch's ranks and returns the
        torch.distributed module. With a GPU, this rank's GPU is made current (and bound to the
        group) first; nccl needs a GPU of its own per rank."""
        import torch
        import torch.distributed as dist

        kw = {}
        if self.device is not None:
            torch.cuda.set_device(self.device)
            if "nccl" in backend:
                kw["device_id"] = torch.device("cuda", self.device)
        store = self.store()
        if self.rank == 0:  # rank 0 hosts torch's store on a port the system picks
            tstore = dist.TCPStore(
                "127.0.0.1", 0, self.nranks, is_master=True, wait_for_workers=False
            )
            store.set("launcher/torch_store_port", str(tstore.port).encode())
        else:
            port = int(store.get("launcher/torch_store_port"))
            tstore = dist.TCPStore("127.0.0.1", port, self.nranks, is_master=False)
        dist.init_process_group(backend, store=tstore, rank=self.rank, world_size=self.nranks, **kw)
        return dist

    def barrier(self, name: str, timeout: float = 30.0) -> None:
        """Waits until every rank has reached barrier `name`, through the launch's store (hosted
        by the launching process, so it outlives any rank)."""
        store = self.store()
        key = f"launcher/barrier/{name}"
        store.add(key, 1)
        deadline = time.monotonic() + timeout
        while store.add(key, 0) < self.nranks:
            if time.monotonic() > deadline:
                raise TimeoutError(f"barrier {name}: not every rank arrived within {timeout} s")
            time.sleep(0.002)


def _create_unique_id() -> bytes:
    import ctran

    return ctran.create_unique_id()


@dataclasses.dataclass
class RankResult:
    rank: int
    value: Any = None
    error_type: str | None = None
    error: str | None = None
    traceback: str | None = None
    exitcode: int | None = None

    @property
    def ok(self) -> bool:
        return self.error_type is None and self.exitcode in (0, None)


def _rank_main(fn, ctx: RankContext, env: dict, args: tuple, conn) -> None:
    stack_dump_on_signal()  # a rank that crashes or hangs prints its Python stacks
    os.environ.update(MULTICAST_OFF)
    os.environ.update({k: str(v) for k, v in env.items()})
    try:
        value = fn(ctx, *args)
        conn.send(RankResult(ctx.rank, value=value))
    except BaseException as e:  # noqa: BLE001 - reported to the launcher
        conn.send(
            RankResult(
                ctx.rank,
                error_type=type(e).__name__,
                error=str(e),
                traceback=traceback.format_exc(),
            )
        )
    finally:
        conn.close()


class LaunchError(AssertionError):
    pass


def launch(
    fn: Callable,
    nranks: int,
    *args,
    env: dict | None = None,
    timeout: float = 60.0,
    expect_errors: bool = False,
    rank_env: Callable[[int], dict] | None = None,
) -> list[RankResult]:
    """Runs ``fn(RankContext, *args)`` on ``nranks`` processes; returns one RankResult each.

    Unless ``expect_errors``, any rank's exception (or death) fails the launch with every
    rank's traceback. Ranks still running at ``timeout`` seconds are killed and reported.
    Rank r runs on GPU r % gpu_count() (RankContext.device).
    """
    import ctran

    ngpus = gpu_count()
    server = ctran.TcpStoreServer(0)
    mpctx = _context()
    procs, conns = [], []
    for r in range(nranks):
        parent, child = mpctx.Pipe(duplex=False)
        renv = dict(env or {})
        if rank_env:
            renv.update(rank_env(r))
        device = r % ngpus if ngpus else None
        ctx = RankContext(r, nranks, "127.0.0.1", server.port, device)
        p = mpctx.Process(target=_rank_main, args=(fn, ctx, renv, args, child), daemon=True)
        p.start()
        child.close()
        procs.append(p)
        conns.append(parent)
    results: list[RankResult | None] = [None] * nranks
    deadline = time.monotonic() + timeout
    pending = set(range(nranks))
    while pending and time.monotonic() < deadline:
        for r in list(pending):
            if conns[r].poll(0.01):
                try:
                    results[r] = conns[r].recv()
                except EOFError:
                    results[r] = RankResult(
                        r, error_type="Died", error="rank exited without a result"
                    )
                pending.discard(r)
            elif not procs[r].is_alive() and not conns[r].poll(0):
                results[r] = RankResult(
                    r, error_type="Died", error=f"exit code {procs[r].exitcode}"
                )
                pending.discard(r)
    dump_stacks([procs[r].pid for r in pending])
    for r in pending:
        procs[r].kill()
        results[r] = RankResult(r, error_type="Hung", error=f"still running after {timeout} s")
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join()
    for r, p in enumerate(procs):
        results[r].exitcode = p.exitcode
    del server
    if ngpus and any(res.error_type is not None for res in results):
        _after_gpu_failure()
    if not expect_errors:
        failed = [res for res in results if res.error_type is not None]
        if failed:
            msg = "\n".join(
                f"--- rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback or ''}"
                for res in failed
            )
            raise LaunchError(f"{len(failed)} of {nranks} ranks failed:\n{msg}")
    return results


def _after_gpu_failure() -> None:
    """Under MPS a rank that failed or was killed mid-kernel sends the MPS server into recovery;
    the next launch's ranks would fail CUDA's initialisation meanwhile, so wait it out here."""
    from rcclx_core.perf import mps

    if mps.active() and not mps.wait_ready():
        raise LaunchError("the MPS server did not accept new clients within 30 s of a failure")


def values(results: list[RankResult]) -> list[Any]:
    return [r.value for r in results]


def pretend_hosts(
    hosts: Sequence[Any] | None = None, *, ranks_per_host: int = 1
) -> Callable[[int], dict]:
    """A ``rank_env`` for launch() that spreads the ranks over pretend hosts of this machine:
    rank r gets ``RCCLX_HOST_ID=pretend-host-<h>`` with h = hosts[r] where `hosts` is given,
    else r // ranks_per_host (one rank a host by default). Ranks of one pretend host reach each
    other through shared memory, ranks of different ones through the network transport."""

    def rank_env(r: int) -> dict:
        host = hosts[r] if hosts is not None else r // ranks_per_host
        return {"RCCLX_HOST_ID": f"pretend-host-{host}"}

    return rank_env


def run_threads(fn: Callable, nranks: int, timeout: float = 240.0) -> list[Any]:
    """Runs ``fn(rank)`` on ``nranks`` threads of this process at once (ranks sharing one
    process, as when one process drives several GPUs); returns their values in rank order.

    Any thread's exception, or a thread still running at ``timeout`` seconds, fails the run
    with every failing rank's traceback (a stuck thread is left behind: threads cannot be
    killed). MULTICAST_OFF is set in this process's environment first.
    """
    import threading

    os.environ.update(MULTICAST_OFF)
    results: list[Any] = [None] * nranks
    errors: dict[int, str] = {}

    def main(r: int) -> None:
        try:
            results[r] = fn(r)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors[r] = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"

    threads = [threading.Thread(target=main, args=(r,), daemon=True) for r in range(nranks)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    stuck = [r for r, t in enumerate(threads) if t.is_alive()]
    failed = "\n".join(f"--- rank {r}: {e}" for r, e in sorted(errors.items()))
    if stuck:
        raise LaunchError(f"ranks {stuck} still running after {timeout:.0f} s\n{failed}")
    if errors:
        raise LaunchError(f"{len(errors)} of {nranks} ranks failed:\n{failed}")
    return results
