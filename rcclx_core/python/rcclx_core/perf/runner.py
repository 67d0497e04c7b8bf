"""One rank's benchmark: for each size, time every column (our algorithms, then the peers), check
each, and share the statistics so that rank 0 can report the slowest rank.

The sequence of collectives is the same on every rank (the same columns in the same order), so
no rank waits on a call another rank does not make. The statistics travel over ``control`` (a
ctran bootstrap over a store), never through the library under test.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable

from rcclx_core import Communicator, Error, _testing
from rcclx_core.perf import check, sched
from rcclx_core.perf.buffers import Workspace, make_placement, torch_dtype
from rcclx_core.perf.ours import OursColumn
from rcclx_core.perf.peers import NotApplicable, open_peers
from rcclx_core.perf.spec import Config, UsageError
from rcclx_core.perf.timing import make_timer

_STATS = ("mean", "median", "min", "max")


@dataclasses.dataclass
class World:
    """This process's place in the run.

    ``control`` (a ctran bootstrap over a store) carries the statistics between ranks, so that
    no result of the check travels through the collectives being checked. ``dist_init(backend)``
    joins torch.distributed ("gloo" or "nccl") for ``--compare``. ``gpu`` is this rank's GPU
    (None on host memory); ``gpus_shared`` whether ranks share GPUs (NCCL then cannot run),
    and ``gpu_sharing`` what the header says about it.
    """

    rank: int
    nranks: int
    comm: Communicator
    control: Any
    dist_init: Callable[[str], None] | None = None
    description: str = ""
    gpu: int | None = None
    gpus_shared: bool = False
    gpu_sharing: str = ""


def _time(column, ws, timer) -> dict:
    call, bufs = column.prepare(ws)
    bufs.reset()
    return timer.time(call)


def _check(column, ws, timer, cfg: Config, world: World) -> dict:
    call, bufs = column.prepare(ws)
    timer.run_once(call, bufs.reset)
    return check.evaluate(cfg, world.nranks, world.rank, ws.count, bufs.result())


def _peer_failed(ws, e: Exception) -> dict:
    """A peer that refused (a type, op or mode it lacks): recorded as its reason."""
    try:
        ws.placement.synchronize()
    except Exception:  # noqa: BLE001 - a dead context fails every later column too
        pass
    text = str(e).strip().splitlines()
    return {"na": f"{type(e).__name__}: {text[0]}" if text else type(e).__name__}


def _measure(column, ws, timer, cfg: Config, world: World, with_check: bool, peer: bool) -> dict:
    """One pass of one column: its statistics (and check), or {"na": reason} for a peer."""
    try:
        out = _time(column, ws, timer)
        if with_check:
            out.update(_check(column, ws, timer, cfg, world))
        return out
    except NotApplicable as e:
        return {"na": str(e)}
    except Exception as e:  # noqa: BLE001 - only a peer's failure is tolerated
        if not peer:
            raise
        return _peer_failed(ws, e)


def _keep_best(prev: dict | None, new: dict, statistic: str) -> dict:
    """The better of two passes' statistics; the check's counts come from the first pass."""
    if prev is None:
        return new
    if "na" in new or ("na" not in prev and prev[statistic] <= new[statistic]):
        return prev
    return {**new, **{k: prev[k] for k in ("wrong", "max_error") if k in prev}}


def _measure_size(
    cfg: Config, world: World, timer, ws, ours: list, peers: list, warm: bool, eager=None
):
    """This rank's results at one size: {"ours": [...], "peers": {name: ...}}.

    ``cfg.passes`` passes over every column (every second one in reverse order), each column
    keeping its best; ``warm`` adds a discarded pass first (a GPU's first timings run at
    higher clocks than the rest). ``eager`` times the ``eager_only`` columns of a graph run.
    """
    nbytes = cfg.bytes_for(ws.count, world.nranks)
    heads = [col.select(nbytes) for col in ours]
    columns = [(i, col, False) for i, col in enumerate(ours) if "skipped" not in heads[i]]
    columns += [(col.name, col, True) for col in peers]
    schedule = [(None, columns)] if warm else []
    schedule += [(p, columns if p % 2 == 0 else columns[::-1]) for p in range(cfg.passes)]
    best: dict[Any, dict] = {}
    scheduling: dict[Any, dict] = {}  # per column, summed over its timed passes
    for p, order in schedule:
        for key, col, is_peer in order:
            t = eager if eager is not None and getattr(col, "eager_only", False) else timer
            before = sched.snapshot()
            result = _measure(col, ws, t, cfg, world, cfg.check and p == 0, is_peer)
            if p is not None:
                best[key] = _keep_best(best.get(key), result, cfg.statistic)
                scheduling[key] = sched.add(scheduling.get(key), sched.since(before))
    return {
        "ours": [{**head, **best.get(i, {})} for i, head in enumerate(heads)],
        "peers": {col.name: best[col.name] for col in peers},
        "sched": [scheduling.get(i, {}) for i in range(len(heads))],
    }


def _merge(per_rank: list[dict], cfg: Config) -> dict:
    """One column's statistics from every rank's: the slowest rank's times, the sum of wrongs,
    the largest error; a skip or a peer's refusal on any rank stands for all."""
    for r in per_rank:
        if "skipped" in r or "na" in r:
            return r
    merged = dict(per_rank[0])
    for key in _STATS:
        merged[key] = max(r[key] for r in per_rank)
    merged["time"] = merged[cfg.statistic]
    merged["rank_times"] = [r[cfg.statistic] for r in per_rank]
    if "host" in merged:
        merged["host"] = {k: max(r["host"][k] for r in per_rank) for k in _STATS}
        merged["host_time"] = merged["host"][cfg.statistic]
    if "wrong" in merged:
        merged["wrong"] = sum(r["wrong"] for r in per_rank)
    if "max_error" in merged:
        merged["max_error"] = max(r["max_error"] for r in per_rank)
    return merged


def _bandwidths(entry: dict, nbytes: int, factor: float) -> None:
    if "time" in entry:
        entry["algbw"] = nbytes / max(entry["time"], 1e-3) / 1e3  # bytes/us -> GB/s
        entry["busbw"] = entry["algbw"] * factor


def make_row(cfg: Config, nranks: int, count: int, ours: dict, peers: dict) -> dict:
    """A table row: our column's merged statistics, and each peer's with the ratio ours/peer."""
    nbytes = cfg.bytes_for(count, nranks)
    factor = cfg.coll.busbw_factor(nranks)
    row = {"size": nbytes, "count": count, "type": cfg.datatype, **ours}
    _bandwidths(row, nbytes, factor)
    if cfg.compare:
        row["peers"] = {}
        for name, merged in peers.items():
            entry = dict(merged)
            _bandwidths(entry, nbytes, factor)
            if "time" in entry and "time" in row:
                entry["ratio"] = row["time"] / max(entry["time"], 1e-3)
            row["peers"][name] = entry
    return row


def _apply_tuning(cfg: Config, comm: Communicator) -> None:
    if cfg.tuning is None:
        return
    try:
        _testing.set_gpu_tuning(comm, cfg.tuning)
    except Error as e:
        raise UsageError(f"--tuning '{cfg.tuning}': {e}") from None


def _symmetric_alloc(cfg: Config, comm: Communicator, placement):
    """(buffer, alloc) for --symmetric: one comm.alloc_symmetric buffer, views at offset 0."""
    if not cfg.symmetric:
        return None, None
    buf = comm.alloc_symmetric(cfg.maxbytes)
    whole = buf.as_tensor(torch_dtype(placement.torch, cfg.dtype))
    return buf, lambda n: whole[:n]


def _failed(row: dict, bound: float | None) -> bool:
    """Whether the row found wrong values (or, in low precision, an error above the bound)."""
    if bound is not None and row.get("max_error", 0.0) > bound:
        return True
    return row.get("wrong", 0) > 0


def _cross_core_link(cfg: Config, world: World) -> dict:
    """Rank 0's sched.cross_core_link() right after a size's columns on host memory, while the
    other ranks wait in the control exchange that follows (blocked, not spinning); {} else."""
    if cfg.device != "cpu" or world.nranks < 2:
        return {}
    world.control.barrier()
    return sched.cross_core_link() if world.rank == 0 else {}


def run(cfg: Config, world: World, report=None) -> int:
    """Runs every size on this rank; ``report`` (rank 0 only) receives the rows.

    Returns 1 when any rank found a wrong element (or a low-precision error above its bound),
    0 otherwise (the same on every rank).
    """
    n = world.nranks
    placement = make_placement(cfg, world.gpu)
    _apply_tuning(cfg, world.comm)
    symmetric, alloc = _symmetric_alloc(cfg, world.comm, placement)
    ours = [OursColumn(world.comm, cfg, placement, a, alloc) for a in cfg.algos]
    peers = open_peers(cfg, world, placement) if cfg.compare else None
    timer = make_timer(cfg, world.comm.barrier)
    eager = timer  # for eager_only columns
    if cfg.graph:
        eager = make_timer(dataclasses.replace(cfg, graph=0), world.comm.barrier)
    bound = check.lp_bound(cfg, n) if cfg.low_precision else None
    failed = False
    for i, nbytes in enumerate(cfg.sizes()):
        count = cfg.count_for(nbytes, n)
        ws = Workspace(cfg, placement, n, world.rank, count)
        warm = i == 0 and cfg.device == "cuda"
        columns = peers.columns if peers else []
        mine = _measure_size(cfg, world, timer, ws, ours, columns, warm, eager)
        del ws  # GPU memory back before the next size
        link = _cross_core_link(cfg, world)
        everyone = [json.loads(b) for b in world.control.all_gather(json.dumps(mine).encode())]
        merged_peers = {
            name: _merge([e["peers"][name] for e in everyone], cfg) for name in mine["peers"]
        }
        for k in range(len(ours)):
            ours_k = _merge([e["ours"][k] for e in everyone], cfg)
            row = make_row(cfg, n, count, ours_k, merged_peers)
            row["sched"] = [e["sched"][k] for e in everyone]
            if link:
                row["link"] = link
            failed |= _failed(row, bound)
            if report is not None:
                report.add(row)
    if peers is not None:
        peers.close()
    if symmetric is not None:
        placement.synchronize()
        symmetric.free()
    world.control.barrier()
    return 1 if failed else 0
