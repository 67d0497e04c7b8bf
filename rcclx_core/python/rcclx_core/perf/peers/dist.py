"""The collectives as torch.distributed calls, shared by the ``gloo`` (host tensors) and
``nccl`` (GPU tensors) peers: the same call table on the tensors of the run's placement.

torch's all_reduce, broadcast and reduce work in place, so they run on the in-place layout of
the buffers (a working copy of the input, refreshed before the checked call); the others run out
of place like ours, or in place with ``--inplace`` (all_to_all_single has no in-place form).
"""

from __future__ import annotations

from typing import Any, Callable

import torch.distributed as dist

from rcclx_core.perf.peers import NotApplicable
from rcclx_core.perf.spec import ROOT, Config, a2av_counts

_OPS = {
    "sum": dist.ReduceOp.SUM,
    "prod": dist.ReduceOp.PRODUCT,
    "min": dist.ReduceOp.MIN,
    "max": dist.ReduceOp.MAX,
    "avg": dist.ReduceOp.AVG,
}
# The names of newer torch first (it deprecates the older ones).
_ALL_GATHER = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_REDUCE_SCATTER = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
IN_PLACE_ONLY = ("all_reduce", "reduce", "broadcast")


def _blocks(t, n: int, count: int) -> list:
    return [t[i * count : (i + 1) * count] for i in range(n)]


def _send_recv(send, recv, rank: int, n: int) -> Callable[[], Any]:
    def ring():
        ops = [
            dist.P2POp(dist.isend, send, (rank + 1) % n),
            dist.P2POp(dist.irecv, recv, (rank - 1) % n),
        ]
        for work in dist.batch_isend_irecv(ops):
            work.wait()

    return ring


def torch_call(cfg: Config, send, recv, rank: int, n: int, count: int) -> Callable[[], Any]:
    """The collective as one argument-less torch.distributed call on the given tensors."""
    name, op = cfg.collective, _OPS[cfg.redop]
    if name == "all_reduce":
        return lambda: dist.all_reduce(recv, op=op)
    if name == "reduce":
        return lambda: dist.reduce(recv, dst=ROOT, op=op)
    if name == "broadcast":
        return lambda: dist.broadcast(recv, src=ROOT)
    if name == "all_gather":
        return lambda: _ALL_GATHER(recv, send)
    if name == "reduce_scatter":
        return lambda: _REDUCE_SCATTER(recv, send, op=op)
    if name == "all_to_all":
        return lambda: dist.all_to_all_single(recv, send)
    if name in ("all_to_all_v", "alltoallv_dynamic"):  # the peer's splits are host lists
        sc = [a2av_counts(count, n, rank, d) for d in range(n)]
        rc = [a2av_counts(count, n, s, rank) for s in range(n)]
        return lambda: dist.all_to_all_single(recv, send, rc, sc)
    if name == "gather":
        outs = _blocks(recv, n, count) if rank == ROOT else None
        return lambda: dist.gather(send, outs, dst=ROOT)
    if name == "scatter":
        ins = _blocks(send, n, count) if rank == ROOT else None
        return lambda: dist.scatter(recv, ins, src=ROOT)
    if name == "send_recv":
        return _send_recv(send, recv, rank, n)
    raise ValueError(f"unknown collective {name}")


class DistPeer:
    """A torch.distributed backend's column; the process group is joined by ``open_peers``."""

    def __init__(self, name: str, label: str, cfg: Config, world, placement):
        self.name, self.label = name, label
        self.cfg, self.world, self.placement = cfg, world, placement

    def prepare(self, ws):
        cfg = self.cfg
        if cfg.inplace and cfg.collective == "all_to_all":
            raise NotApplicable("torch's all_to_all_single has no in-place form")
        bufs = ws.get(cfg.inplace or cfg.collective in IN_PLACE_ONLY)
        send, recv = self.placement.as_torch(bufs.send), self.placement.as_torch(bufs.recv)
        call = torch_call(cfg, send, recv, self.world.rank, self.world.nranks, ws.count)
        return call, bufs
