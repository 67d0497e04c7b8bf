"""A Megatron-style tensor-parallel transformer block (pre-norm attention + SwiGLU MLP) over a
torch.distributed group, with random weights, for timing decode and prefill steps.

Attention: one column-parallel qkv projection (this rank's heads), local attention over a
preallocated KV cache, a row-parallel output projection (one all_reduce). MLP: a column-parallel
gate/up projection and a row-parallel down projection (one all_reduce). So a step costs exactly
two all_reduces of (tokens, hidden). ``reduce`` decides how those are done: ``"group"`` (the
layers' own ``dist.all_reduce``), a callable (e.g. a low-precision call on the group's
communicator), or ``None`` (skipped: the compute floor of the same block).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

__all__ = ["BlockShape", "PRESETS", "TransformerBlock"]


@dataclass(frozen=True)
class BlockShape:
    hidden: int
    heads: int
    kv_heads: int
    ffn: int

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


# Llama-3-8B- and 70B-class layers; "tiny" runs on a CPU in milliseconds.
PRESETS = {
    "8b": BlockShape(hidden=4096, heads=32, kv_heads=8, ffn=14336),
    "70b": BlockShape(hidden=8192, heads=64, kv_heads=8, ffn=28672),
    "tiny": BlockShape(hidden=256, heads=8, kv_heads=4, ffn=1024),
}


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    var = x.float().pow(2).mean(-1, keepdim=True)
    return (x.float() * torch.rsqrt(var + eps)).to(x.dtype) * weight


class TransformerBlock(torch.nn.Module):
    """One decoder layer, heads and FFN split over ``group`` (its size must divide the number of
    heads, of KV heads and the FFN width). Parameters are drawn from ``seed`` and this rank's
    index, so two blocks built alike on another backend's group hold the same numbers."""

    def __init__(self, shape: BlockShape, group, *, seed=0, device=None, dtype=torch.float32):
        super().__init__()
        # Imported here: the layers live in a sibling module of this package.
        import torch.distributed as dist

        from rcclx_benchmarks.e2e.tensor_parallel import ColumnParallelLinear, RowParallelLinear

        tp = dist.get_world_size(group)
        for name, value in (("heads", shape.heads), ("kv_heads", shape.kv_heads)):
            if value % tp:
                raise ValueError(f"TransformerBlock: {name} {value} is not a multiple of tp {tp}")
        self.shape = shape
        self.local_heads = shape.heads // tp
        self.local_kv = shape.kv_heads // tp
        d = shape.head_dim
        kw = {"device": device, "dtype": dtype}
        # The fused qkv's local slice is read as [q | k | v] of this rank's heads: with random
        # weights any fixed split of the rows is a valid layer of the same cost.
        self.qkv = ColumnParallelLinear(
            shape.hidden, (shape.heads + 2 * shape.kv_heads) * d, group, bias=False, **kw
        )
        self.out = RowParallelLinear(shape.heads * d, shape.hidden, group, bias=False, **kw)
        self.gate_up = ColumnParallelLinear(shape.hidden, 2 * shape.ffn, group, bias=False, **kw)
        self.down = RowParallelLinear(shape.ffn, shape.hidden, group, bias=False, **kw)
        self.norm1 = torch.nn.Parameter(torch.ones(shape.hidden, **kw))
        self.norm2 = torch.nn.Parameter(torch.ones(shape.hidden, **kw))
        gen = torch.Generator().manual_seed(seed * 1000 + dist.get_rank(group))
        # Scaled by the full fan-in (a row-parallel shard sees 1/tp of it), drawn on the host
        # so every device and backend gets the same numbers.
        fan_in = {self.qkv: shape.hidden, self.gate_up: shape.hidden}
        fan_in.update({self.out: shape.heads * d, self.down: shape.ffn})
        with torch.no_grad():
            for layer, n in fan_in.items():
                w = torch.randn(layer.weight.shape, generator=gen) / n**0.5
                layer.weight.copy_(w)
        self.kv_cache: tuple[torch.Tensor, torch.Tensor] | None = None

    def allocate_cache(self, batch: int, length: int) -> None:
        """A KV cache of ``length`` past positions plus one for the new token, random past keys
        and values (their values do not change the cost), preallocated once."""
        d = self.shape.head_dim
        p = self.norm1
        gen = torch.Generator().manual_seed(int(length) * 7 + batch)
        shape = (batch, self.local_kv, length + 1, d)
        k = (torch.randn(shape, generator=gen) * 0.5).to(device=p.device, dtype=p.dtype)
        v = (torch.randn(shape, generator=gen) * 0.5).to(device=p.device, dtype=p.dtype)
        self.kv_cache = (k, v)

    def _row(self, layer, x: torch.Tensor, reduce) -> torch.Tensor:
        if reduce == "group":
            return layer(x)
        y = F.linear(x, layer.weight).contiguous()
        if reduce is not None:
            reduce(y)
        return y if layer.bias is None else y + layer.bias

    def _qkv(self, x: torch.Tensor):
        b, t, _ = x.shape
        d = self.shape.head_dim
        qkv = self.qkv(x)
        nq, nkv = self.local_heads * d, self.local_kv * d
        q = qkv[..., :nq].view(b, t, self.local_heads, d).transpose(1, 2)
        k = qkv[..., nq : nq + nkv].view(b, t, self.local_kv, d).transpose(1, 2)
        v = qkv[..., nq + nkv :].view(b, t, self.local_kv, d).transpose(1, 2)
        return q, k, v

    def _attend(self, q, k, v, causal: bool) -> torch.Tensor:
        # Grouped-query attention: each KV head serves `rep` query heads. Expanded views (not
        # repeat_interleave, whose tensor form reads sizes on the host) keep the step capturable.
        b, kv, length, d = k.shape
        rep = self.local_heads // kv
        k = k[:, :, None].expand(b, kv, rep, length, d).reshape(b, kv * rep, length, d)
        v = v[:, :, None].expand(b, kv, rep, length, d).reshape(b, kv * rep, length, d)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        b, _, t, _ = o.shape
        return o.transpose(1, 2).reshape(b, t, self.local_heads * self.shape.head_dim)

    def _mlp(self, x: torch.Tensor, reduce) -> torch.Tensor:
        gate, up = self.gate_up(_rms_norm(x, self.norm2)).chunk(2, dim=-1)
        return x + self._row(self.down, F.silu(gate) * up, reduce)

    def decode(self, x: torch.Tensor, reduce="group") -> torch.Tensor:
        """One token per sequence: x (B, 1, hidden). Its key and value go to the cache's last
        slot (a fixed position, so every step has the same shapes and can be graph-replayed)."""
        if self.kv_cache is None:
            raise RuntimeError("TransformerBlock.decode: call allocate_cache(batch, length) first")
        q, k, v = self._qkv(_rms_norm(x, self.norm1))
        cache_k, cache_v = self.kv_cache
        cache_k[:, :, -1:].copy_(k)
        cache_v[:, :, -1:].copy_(v)
        h = x + self._row(self.out, self._attend(q, cache_k, cache_v, False), reduce)
        return self._mlp(h, reduce)

    def prefill(self, x: torch.Tensor, reduce="group") -> torch.Tensor:
        """T tokens of each sequence at once, causal: x (B, T, hidden)."""
        q, k, v = self._qkv(_rms_norm(x, self.norm1))
        h = x + self._row(self.out, self._attend(q, k, v, True), reduce)
        return self._mlp(h, reduce)
