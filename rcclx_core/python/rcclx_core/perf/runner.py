"""One rank's benchmark: for each size and algorithm, time the collective, check it, and share
the statistics so that rank 0 can report the slowest rank.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
from typing import Any, Callable

import numpy as np

from rcclx_core import Communicator, InvalidArgumentError
from rcclx_core.perf import check
from rcclx_core.perf.spec import REDOPS, ROOT, Config


@dataclasses.dataclass
class World:
    """This process's place in the run.

    ``control`` (a ctran bootstrap over a store) carries the statistics between ranks, so that
    no result of the check travels through the collectives being checked. ``gloo_init`` joins
    torch.distributed's gloo group for ``--compare gloo``.
    """

    rank: int
    nranks: int
    comm: Communicator
    control: Any
    gloo_init: Callable[[], None] | None = None
    description: str = ""


def time_calls(call: Callable[[], Any], cfg: Config, barrier: Callable[[], Any]) -> dict:
    """Warm-up calls, then ``cfg.iters`` calls timed one by one; statistics in microseconds."""
    barrier()
    for _ in range(cfg.warmup_iters):
        call()
    times = np.empty(cfg.iters)
    for i in range(cfg.iters):
        start = time.perf_counter()
        call()
        times[i] = time.perf_counter() - start
    times *= 1e6
    return {
        "mean": float(times.mean()),
        "median": float(np.median(times)),
        "min": float(times.min()),
        "max": float(times.max()),
    }


def rcclx_call(comm: Communicator, cfg: Config, send, recv, algo: str) -> Callable[[], Any]:
    """The collective as one argument-less call on fixed buffers."""
    dt, op = int(cfg.dtype.rcclx), int(REDOPS[cfg.redop])
    calls = {
        "all_reduce": functools.partial(
            comm.all_reduce, send, recv, op=op, algo=None if algo == "auto" else algo, dtype=dt
        ),
        "reduce": functools.partial(comm.reduce, send, recv, root=ROOT, op=op, dtype=dt),
        "broadcast": functools.partial(comm.broadcast, send, recv, root=ROOT, dtype=dt),
        "all_gather": functools.partial(comm.all_gather, send, recv, dtype=dt),
        "reduce_scatter": functools.partial(comm.reduce_scatter, send, recv, op=op, dtype=dt),
        "all_to_all": functools.partial(comm.all_to_all, send, recv, dtype=dt),
    }
    return calls[cfg.collective]


def _measure_rcclx(world: World, cfg: Config, count: int, send, recv, algo: str) -> dict:
    comm = world.comm
    out: dict[str, Any] = {"algo": algo}
    if cfg.collective == "all_reduce":
        # The selector answers without communicating, identically on every rank; it also
        # refuses a forced algorithm that cannot run here, before any rank starts one.
        nbytes = count * cfg.dtype.itemsize
        hint = None if algo == "auto" else algo
        try:
            out["selected"], out["reason"] = comm.select_all_reduce(
                nbytes, int(cfg.dtype.rcclx), int(REDOPS[cfg.redop]), hint
            )
        except InvalidArgumentError as e:
            return {**out, "skipped": str(e)}
    call = rcclx_call(comm, cfg, send, recv, algo)
    out.update(time_calls(call, cfg, comm.barrier))
    if cfg.check:
        check.poison(recv)
        call()
        out["wrong"] = check.count_wrong(cfg, world.nranks, world.rank, count, recv)
    return out


def _merge(per_rank: list[dict], cfg: Config) -> dict:
    """One row's statistics from every rank's: the slowest rank's times, the sum of wrongs."""
    first = per_rank[0]
    if "skipped" in first or "error" in first:
        return first
    merged = dict(first)
    for key in ("mean", "median", "min", "max"):
        merged[key] = max(r[key] for r in per_rank)
    merged["time"] = merged[cfg.statistic]
    if cfg.check:
        merged["wrong"] = sum(r["wrong"] for r in per_rank)
    return merged


def _row(cfg: Config, world: World, count: int, rcclx: dict, gloo: dict | None) -> dict:
    nbytes = cfg.bytes_for(count, world.nranks)
    row = {"size": nbytes, "count": count, "type": cfg.datatype, **rcclx}
    if "time" in rcclx:
        algbw = nbytes / max(rcclx["time"], 1e-3) / 1e3  # bytes/us -> GB/s
        row["algbw"] = algbw
        row["busbw"] = algbw * cfg.coll.busbw_factor(world.nranks)
    if gloo is not None:
        row["gloo"] = gloo
        if "time" in gloo and "time" in rcclx:
            row["speedup"] = gloo["time"] / max(rcclx["time"], 1e-3)
    return row


def run(cfg: Config, world: World, report=None) -> int:
    """Runs every size on this rank; ``report`` (rank 0 only) receives the rows.

    Returns 1 when any rank found a wrong element, 0 otherwise (the same on every rank).
    """
    gloo = None
    if cfg.compare == "gloo":
        from rcclx_core.perf.gloo import GlooBench  # imports torch

        gloo = GlooBench(cfg, world)
    n, wrong = world.nranks, 0
    for nbytes in cfg.sizes():
        count = cfg.count_for(nbytes, n)
        send = check.send_buffer(cfg, n, world.rank, count)
        recv = check.recv_buffer(cfg, n, count)
        mine = {
            "rcclx": [_measure_rcclx(world, cfg, count, send, recv, a) for a in cfg.algos],
            "gloo": gloo.measure(count, send, recv) if gloo else None,
        }
        everyone = [json.loads(b) for b in world.control.all_gather(json.dumps(mine).encode())]
        gloo_row = _merge([e["gloo"] for e in everyone], cfg) if gloo else None
        for i in range(len(cfg.algos)):
            row = _row(cfg, world, count, _merge([e["rcclx"][i] for e in everyone], cfg), gloo_row)
            wrong += row.get("wrong", 0)
            if report is not None:
                report.add(row)
    if gloo is not None:
        gloo.close()
    world.control.barrier()
    return 1 if wrong else 0
