"""A mixture-of-experts block for timing: router (top-k over E experts) -> dispatch -> each
rank's expert MLPs (SwiGLU) -> combine, expert-parallel over a group's ranks.

Two exchanges of the same routing, which give the same output:

- ``forward_dynamic``: ``moe.dispatch`` / ``moe.combine`` on the group's RCCLX communicator
  (``alltoallv_dynamic``): no device-to-host sync, every shape static, so capturable in one
  CUDA graph. The experts run over the static receive buffer, each masked to its own rows (the
  dense-masked form of a grouped GEMM: capture-safe, E_local times the FLOPs of the real rows).
- ``forward_host_sync``: what a backend without a dynamic all-to-all does (gloo, NCCL through
  torch): exchange the counts, copy them to the host, ``dist.all_to_all_single`` with those
  splits, run each expert on exactly its rows, send back.

``forward_local`` is the compute floor of either: the router, the experts (in that path's form)
and the weighted sum, with no exchange.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F

from torchcomms_rcclx import moe

__all__ = ["MoeShape", "MOE_PRESETS", "MoeBlock"]


@dataclass(frozen=True)
class MoeShape:
    hidden: int
    experts: int
    top_k: int
    expert_ffn: int


# Mixtral-8x7B-like (8 experts, top-2) and DeepSeek-V3-like (many small experts, top-8) layers,
# scaled down so that the experts split over 2-8 ranks and a step fits one GPU; "tiny" for CPU.
MOE_PRESETS = {
    "mixtral": MoeShape(hidden=4096, experts=8, top_k=2, expert_ffn=14336 // 4),
    "deepseek": MoeShape(hidden=2048, experts=64, top_k=8, expert_ffn=1408),
    "tiny": MoeShape(hidden=128, experts=8, top_k=2, expert_ffn=256),
}


class MoeBlock(torch.nn.Module):
    """Router replicated on every rank (its own tokens), ``experts // world`` experts per rank.
    Parameters come from ``seed`` (and the rank for the experts), so blocks built alike over two
    groups hold the same numbers."""

    def __init__(self, shape: MoeShape, group, *, seed=0, device=None, dtype=torch.float32):
        super().__init__()
        self.shape = shape
        self.group = group
        self.world = dist.get_world_size(group)
        if shape.experts % self.world:
            raise ValueError(
                f"MoeBlock: experts {shape.experts} is not a multiple of {self.world} ranks"
            )
        self.local = shape.experts // self.world
        h, f = shape.hidden, shape.expert_ffn
        gen = torch.Generator().manual_seed(seed)
        router = torch.randn(shape.experts, h, generator=gen) / h**0.5
        gen.manual_seed(seed * 1000 + 1 + dist.get_rank(group))
        gate_up = torch.randn(self.local, h, 2 * f, generator=gen) / h**0.5
        down = torch.randn(self.local, f, h, generator=gen) / f**0.5
        kw = {"device": device, "dtype": dtype}
        self.router = torch.nn.Parameter(router.to(**kw))
        self.gate_up = torch.nn.Parameter(gate_up.to(**kw))
        self.down = torch.nn.Parameter(down.to(**kw))

    def _route(self, x: torch.Tensor):
        logits = F.linear(x, self.router).float()
        weights, ids = torch.topk(torch.softmax(logits, -1), self.shape.top_k, dim=-1)
        return ids, (weights / weights.sum(-1, keepdim=True)).to(x.dtype)

    def _expert(self, e: int, rows: torch.Tensor) -> torch.Tensor:
        gate, up = (rows @ self.gate_up[e]).chunk(2, dim=-1)
        return (F.silu(gate) * up) @ self.down[e]

    def _experts_masked(self, rows, counts, offsets) -> torch.Tensor:
        # Row r belongs to local expert e when offsets[e] <= r < offsets[e] + counts[e].
        r = torch.arange(rows.shape[0], device=rows.device).unsqueeze(1)
        inside = (r >= offsets) & (r < offsets + counts)  # (rows, local)
        out = torch.zeros_like(rows)
        for e in range(self.local):
            out = out + self._expert(e, rows) * inside[:, e : e + 1].to(rows.dtype)
        return out

    def forward_dynamic(self, x: torch.Tensor, comm) -> torch.Tensor:
        """x (tokens, hidden) over ``comm`` (a TorchCommRCCLX), no host sync."""
        ids, weights = self._route(x)
        rows, counts, offsets, handle = moe.dispatch(comm, x, ids, self.shape.experts)
        out = self._experts_masked(rows, counts, offsets)
        return moe.combine(comm, out, handle, weights)

    def forward_host_sync(self, x: torch.Tensor) -> torch.Tensor:
        """x (tokens, hidden) over ``self.group`` with split sizes read on the host."""
        ids, weights = self._route(x)
        t, k = ids.shape
        flat = ids.reshape(-1)
        order = torch.argsort(flat, stable=True)
        send = x.index_select(0, torch.div(order, k, rounding_mode="floor"))
        per_expert = torch.bincount(flat, minlength=self.shape.experts)
        recv_counts = torch.empty_like(per_expert)
        dist.all_to_all_single(recv_counts, per_expert, group=self.group)
        send_splits = per_expert.view(self.world, self.local).sum(1).tolist()
        by_src = recv_counts.view(self.world, self.local).tolist()  # the host sync
        recv_splits = [sum(c) for c in by_src]
        received = x.new_empty(sum(recv_splits), x.shape[1])
        dist.all_to_all_single(received, send, recv_splits, send_splits, group=self.group)
        # Received rows are source-major, then local expert; run each expert on its rows.
        out = torch.empty_like(received)
        start = 0
        for src in range(self.world):
            for e in range(self.local):
                n = by_src[src][e]
                if n:
                    out[start : start + n] = self._expert(e, received[start : start + n])
                start += n
        returned = x.new_empty(t * k, x.shape[1])
        dist.all_to_all_single(returned, out, send_splits, recv_splits, group=self.group)
        slots = torch.empty_like(returned)
        slots.index_copy_(0, order, returned)
        return self._weighted_sum(slots.view(t, k, -1), weights)

    def forward_local(self, x: torch.Tensor, dense_masked: bool = True) -> torch.Tensor:
        """The compute floor, no exchange: the routing, the experts and the weighted sum. With
        ``dense_masked`` (the dynamic path's floor) every expert runs masked over a buffer of
        the dynamic path's capacity (world * tokens * k rows); without (the host-sync path's),
        each expert runs on its share of this rank's tokens * k rows (what a rank receives on
        average)."""
        ids, weights = self._route(x)
        t, k = ids.shape
        order = torch.argsort(ids.reshape(-1), stable=True)
        rows = x.index_select(0, torch.div(order, k, rounding_mode="floor"))
        if dense_masked:
            rows = rows.repeat(self.world, 1)
            n = rows.shape[0] // self.local
            counts = torch.full((self.local,), n, device=x.device)
            offsets = torch.arange(self.local, device=x.device) * n
            out = self._experts_masked(rows, counts, offsets)[: t * k]
        else:
            out = torch.cat(
                [self._expert(e, part) for e, part in enumerate(rows.chunk(self.local))]
            )
        return self._weighted_sum(out.view(t, k, -1), weights)

    @staticmethod
    def _weighted_sum(slots: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        # The same order and accumulation type as moe.combine, so both paths agree.
        acc = torch.float64 if slots.dtype == torch.float64 else torch.float32
        x = slots.to(acc) * weights.unsqueeze(-1).to(acc)
        total = x[:, 0]
        for j in range(1, x.shape[1]):
            total = total + x[:, j]
        return total.to(slots.dtype)
