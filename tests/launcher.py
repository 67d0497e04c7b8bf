"""Runs a function as N real processes on this host and gathers results and exceptions.

Each rank is a process forked from a clean fork server (no threads, modules preloaded), so a
launch costs milliseconds, not an interpreter start. Ranks meet through a TCP store that the
launching process hosts for the duration of one launch. `run_threads` runs ranks as threads of
this process instead (several ranks in one process, as one process driving several GPUs).
"""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import os
import time
import traceback
from typing import Any, Callable

_PRELOAD = ["numpy", "ctran", "rcclx_core"]
_CONTEXT = None


def _context():
    global _CONTEXT
    if _CONTEXT is None:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload([m for m in _PRELOAD if _importable(m)])
        _CONTEXT = ctx
    return _CONTEXT


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


@dataclasses.dataclass
class RankContext:
    """What a rank function receives: its rank, the world size, and the launch's store."""

    rank: int
    nranks: int
    store_host: str
    store_port: int

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
    """
    import ctran

    server = ctran.TcpStoreServer(0)
    mpctx = _context()
    procs, conns = [], []
    for r in range(nranks):
        parent, child = mpctx.Pipe(duplex=False)
        renv = dict(env or {})
        if rank_env:
            renv.update(rank_env(r))
        ctx = RankContext(r, nranks, "127.0.0.1", server.port)
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
    if not expect_errors:
        failed = [res for res in results if res.error_type is not None]
        if failed:
            msg = "\n".join(
                f"--- rank {res.rank}: {res.error_type}: {res.error}\n{res.traceback or ''}"
                for res in failed
            )
            raise LaunchError(f"{len(failed)} of {nranks} ranks failed:\n{msg}")
    return results


def values(results: list[RankResult]) -> list[Any]:
    return [r.value for r in results]


def run_threads(fn: Callable, nranks: int, timeout: float = 240.0) -> list[Any]:
    """Runs ``fn(rank)`` on ``nranks`` threads of this process at once (ranks sharing one
    process, as when one process drives several GPUs); returns their values in rank order.

    Any thread's exception, or a thread still running at ``timeout`` seconds, fails the run
    with every failing rank's traceback (a stuck thread is left behind: threads cannot be
    killed).
    """
    import threading

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
