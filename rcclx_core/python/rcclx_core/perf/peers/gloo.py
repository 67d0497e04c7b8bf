"""``--compare gloo``: torch.distributed's Gloo backend on the run's host buffers (CPU runs)."""

from __future__ import annotations

from rcclx_core.perf.peers.dist import DistPeer


def unavailable(cfg, world) -> str | None:
    """Why Gloo cannot run in this run, or None."""
    if cfg.device != "cpu":
        return f"gloo runs on host buffers (this run is on {cfg.device}; use --device cpu)"
    return None


def columns(cfg, world, placement) -> list:
    return [DistPeer("gloo", "gloo", cfg, world, placement)]
