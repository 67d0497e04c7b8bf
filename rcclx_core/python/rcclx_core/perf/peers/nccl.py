"""``--compare nccl``: torch.distributed's NCCL backend on the run's GPU tensors."""

from __future__ import annotations

from rcclx_core.perf.peers.dist import DistPeer


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


def columns(cfg, world, placement) -> list:
    warm_up(placement)
    return [DistPeer("nccl", "nccl", cfg, world, placement)]
