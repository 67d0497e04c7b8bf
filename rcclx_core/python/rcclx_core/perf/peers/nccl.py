"""``--compare nccl``: torch.distributed's NCCL backend on the run's GPU tensors.

For alltoallv_dynamic two columns: ``nccl``, all_to_all_single with the split sizes as host
lists known in advance (capturable: with ``--graph`` it is NCCL's static-split graph), and
``nccl_sync``, what a caller whose split sizes live on the GPU must do with NCCL: exchange the
counts with an all_to_all_single of the int64 split tensor, copy both count vectors to the host
(``.tolist()``, which waits for the GPU), then exchange the rows.
"""

from __future__ import annotations

from rcclx_core.perf.peers.dist import DistPeer
from rcclx_core.perf.spec import a2av_counts


def unavailable(cfg, world) -> str | None:
    """Why NCCL cannot run in this run, or None."""
    import torch.distributed as dist

    if cfg.device != "cuda":
        return f"NCCL runs on GPU buffers (this run is on {cfg.device}; use --device cuda)"
    if world.gpus_shared:
        return "ranks share a GPU, and NCCL needs one GPU per rank"
    if not dist.is_nccl_available():
        return "this torch is built without NCCL"
    return None


def warm_up(placement) -> None:
    """One small all_reduce, so that NCCL's communicator exists before any graph capture."""
    import torch
    import torch.distributed as dist

    dist.all_reduce(torch.ones(1, device=placement.device))
    torch.cuda.synchronize(placement.device)


class NcclSyncColumn:
    """alltoallv_dynamic's split sizes on the GPU, through NCCL: counts, host copy, rows."""

    name = label = "nccl_sync"
    eager_only = True  # the host copy of the counts cannot be captured in a graph

    def __init__(self, cfg, world, placement):
        self.cfg, self.world, self.placement = cfg, world, placement

    def prepare(self, ws):
        import torch
        import torch.distributed as dist

        n, me, dev = self.world.nranks, self.world.rank, self.placement.device
        bufs = ws.get(False)
        send, recv = self.placement.as_torch(bufs.send), self.placement.as_torch(bufs.recv)
        sends = [a2av_counts(ws.count, n, me, d) for d in range(n)]
        send_splits = torch.tensor(sends, dtype=torch.int64, device=dev)
        recv_splits = torch.empty(n, dtype=torch.int64, device=dev)

        def call():
            dist.all_to_all_single(recv_splits, send_splits)
            counts = torch.stack((send_splits, recv_splits)).tolist()
            dist.all_to_all_single(recv, send, counts[1], counts[0])

        return call, bufs


def columns(cfg, world, placement) -> list:
    warm_up(placement)
    cols = [DistPeer("nccl", "nccl", cfg, world, placement)]
    if cfg.collective == "alltoallv_dynamic":
        cols.append(NcclSyncColumn(cfg, world, placement))
    return cols
