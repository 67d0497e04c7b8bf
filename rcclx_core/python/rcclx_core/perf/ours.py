"""Our collectives as the benchmark's columns: one per all_reduce algorithm (``--algo``), or the
collective's one path; the same calls on host arrays and on GPU tensors (a GPU call also takes
the stream it is enqueued on, read at call time).
"""

from __future__ import annotations

from typing import Any, Callable

from rcclx_core import Communicator, InvalidArgumentError, _testing
from rcclx_core.perf.spec import REDOPS, ROOT, Config, a2av_counts


def _counts_array(placement, counts: list[int]):
    """int64 counts where the placement keeps its buffers (a GPU tensor on a GPU)."""
    if placement.kind == "cuda":
        t = placement.torch
        return t.tensor(counts, dtype=t.int64, device=placement.device)
    import numpy as np

    return np.asarray(counts, dtype=np.int64)


def rcclx_call(
    comm: Communicator, cfg: Config, placement, send, recv, count: int, algo: str = "auto"
) -> Callable[[], Any]:
    """The collective as one argument-less call on fixed buffers."""
    dt, op = int(cfg.dtype.rcclx), int(REDOPS[cfg.redop])
    n, me = comm.size, comm.rank
    stream = placement.stream  # {} on the host, {"stream": current stream} on a GPU
    lp = {"low_precision": True} if cfg.low_precision else {}
    name = cfg.collective
    if name == "all_reduce":
        hint = None if algo in ("auto", "lp") else algo
        return lambda: comm.all_reduce(send, recv, op=op, algo=hint, dtype=dt, **lp, **stream())
    if name == "reduce":
        return lambda: comm.reduce(send, recv, root=ROOT, op=op, dtype=dt, **stream())
    if name == "broadcast":
        return lambda: comm.broadcast(send, recv, root=ROOT, dtype=dt, **stream())
    if name == "all_gather":
        return lambda: comm.all_gather(send, recv, dtype=dt, **lp, **stream())
    if name == "reduce_scatter":
        return lambda: comm.reduce_scatter(send, recv, op=op, dtype=dt, **lp, **stream())
    if name == "all_to_all":
        return lambda: comm.all_to_all(send, recv, dtype=dt, **lp, **stream())
    if name == "all_to_all_v":
        sc = [a2av_counts(count, n, me, d) for d in range(n)]
        rc = [a2av_counts(count, n, s, me) for s in range(n)]
        return lambda: comm.all_to_all_v(send, recv, sc, rc, dtype=dt, **stream())
    if name == "alltoallv_dynamic":
        sc = _counts_array(placement, [a2av_counts(count, n, me, d) for d in range(n)])
        rc = _counts_array(placement, [0] * n)
        return lambda: comm.alltoallv_dynamic(send, recv, sc, rc, dtype=dt, **stream())
    if name == "gather":
        return lambda: comm.gather(send, recv, root=ROOT, dtype=dt, **stream())
    if name == "scatter":
        return lambda: comm.scatter(send, recv, root=ROOT, dtype=dt, **stream())
    if name == "send_recv":
        nxt, prv = (me + 1) % n, (me - 1) % n

        def ring():
            comm.group_start()
            comm.send(send, nxt, dtype=dt, **stream())
            comm.recv(recv, prv, dtype=dt, **stream())
            comm.group_end()

        return ring
    raise ValueError(f"unknown collective {name}")


class OursColumn:
    """One of our rows at every size: an all_reduce algorithm ("auto" lets the selector pick;
    "lp" is the low-precision path), or "-" for a collective without algorithms.

    ``alloc`` (elements -> buffer) puts the buffers in symmetric memory (``--symmetric``).
    """

    def __init__(self, comm: Communicator, cfg: Config, placement, algo: str, alloc=None):
        self.comm, self.cfg, self.placement, self.algo, self.alloc = (
            comm,
            cfg,
            placement,
            algo,
            alloc,
        )

    def select(self, nbytes: int) -> dict:
        """What this row runs at ``nbytes``: {"algo", "selected", "reason"}, or {"skipped"}.

        The selector answers without communicating, identically on every rank; it also refuses
        a forced algorithm that cannot run here (e.g. ring on GPU buffers), before any rank
        starts one.
        """
        out: dict[str, Any] = {"algo": self.algo}
        if self.cfg.collective != "all_reduce" or self.algo == "lp":
            return out
        hint = None if self.algo == "auto" else self.algo
        try:
            out["selected"], out["reason"] = _testing.selection(
                self.comm,
                nbytes,
                int(self.cfg.dtype.rcclx),
                int(REDOPS[self.cfg.redop]),
                hint,
                self.placement.kind == "cuda",
            )
        except InvalidArgumentError as e:
            return {**out, "skipped": str(e)}
        return out

    def prepare(self, ws):
        """(call, buffers) at the workspace's size."""
        key = "symmetric" if self.alloc else ""
        bufs = ws.get(self.cfg.inplace, self.alloc, key)
        call = rcclx_call(
            self.comm, self.cfg, self.placement, bufs.send, bufs.recv, ws.count, self.algo
        )
        return call, bufs
