"""``--compare gloo``: the same collective on torch.distributed's gloo backend, in the same
processes and on the same inputs, timed and checked the same way.

Gloo's all_reduce, broadcast and reduce work in place, so they run on a working copy of the input
(refreshed before the checked call); the others run out of place like rcclx.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from rcclx_core.perf import check
from rcclx_core.perf.runner import World, time_calls
from rcclx_core.perf.spec import ROOT, Config

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


class GlooBench:
    """Joins the gloo group on creation; ``measure`` runs one size, ``close`` leaves the group."""

    def __init__(self, cfg: Config, world: World):
        self.cfg, self.world = cfg, world
        world.gloo_init()

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        t = torch.from_numpy(array)
        return t.view(torch.bfloat16) if self.cfg.datatype == "bfloat16" else t

    def _call(self, send: torch.Tensor, work: torch.Tensor, recv: torch.Tensor):
        op, name = _OPS[self.cfg.redop], self.cfg.collective
        if name == "all_reduce":
            return lambda: dist.all_reduce(work, op=op)
        if name == "reduce":
            return lambda: dist.reduce(work, dst=ROOT, op=op)
        if name == "broadcast":
            return lambda: dist.broadcast(work, src=ROOT)
        if name == "all_gather":
            return lambda: _ALL_GATHER(recv, send)
        if name == "reduce_scatter":
            return lambda: _REDUCE_SCATTER(recv, send, op=op)
        return lambda: dist.all_to_all_single(recv, send)

    def measure(self, count: int, send: np.ndarray, recv: np.ndarray) -> dict:
        """Statistics (as runner.time_calls) and wrong elements, or the error gloo raised."""
        cfg = self.cfg
        in_place = cfg.collective in ("all_reduce", "reduce", "broadcast")
        work = send.copy()
        out = work if in_place else recv
        send_t = self._tensor(send)
        call = self._call(send_t, self._tensor(work), self._tensor(recv))
        try:
            call()  # the first call finds out whether gloo supports this type and op
        except (RuntimeError, ValueError, TypeError) as e:
            return {"error": str(e).splitlines()[0] if str(e) else type(e).__name__}
        stats = time_calls(call, cfg, dist.barrier)
        if cfg.check:
            np.copyto(work, send)
            check.poison(recv)
            call()
            stats["wrong"] = check.count_wrong(cfg, self.world.nranks, self.world.rank, count, out)
        return stats

    def close(self) -> None:
        dist.destroy_process_group()
