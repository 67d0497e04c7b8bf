"""Megatron-style tensor-parallel linear layers over a torch.distributed group.

A column-parallel layer holds a contiguous block of the output features (rows of the weight) and
needs no communication in forward unless the full output is gathered; a row-parallel layer holds
a block of the input features (columns of the weight), so each rank computes a partial sum that
one all_reduce completes. Chaining column -> row (attention qkv -> output projection, MLP up ->
down) costs one all_reduce per pair. ``shard_linear`` cuts a full ``nn.Linear`` into this rank's
slice, so a model trained unsharded can be run sharded and compared exactly.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

__all__ = ["ColumnParallelLinear", "RowParallelLinear", "shard_linear"]


def _divide(value: int, tp: int, name: str, layer: str) -> int:
    if value % tp != 0:
        raise ValueError(f"{layer}: {name} {value} is not a multiple of the group size {tp}")
    return value // tp


class _AllReduceSum(torch.autograd.Function):
    """Sums the row-parallel partial outputs; the gradient reaching each partial is the output's
    gradient unchanged (d sum / d part = 1). The collective gets a detached tensor: the backend
    exchanges plain buffers and refuses tensors that carry autograd history."""

    @staticmethod
    def forward(ctx, y, group):
        y = y.detach().contiguous().clone()
        dist.all_reduce(y, group=group)
        return y

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _ReplicatedInput(torch.autograd.Function):
    """The identity on a column-parallel layer's (replicated) input whose backward sums the
    input gradient over the ranks: each rank's slice of the weight contributes only its part
    of d loss / d input, and the layers before it need the whole."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.detach().contiguous().clone()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class _AllGatherLastDim(torch.autograd.Function):
    """Concatenates the ranks' column slices along the last dim; backward keeps this rank's
    slice of the gradient."""

    @staticmethod
    def forward(ctx, y, group, tp, rank):
        y = y.detach().contiguous()
        parts = [torch.empty_like(y) for _ in range(tp)]
        dist.all_gather(parts, y, group=group)
        ctx.width, ctx.rank = y.shape[-1], rank
        return torch.cat(parts, dim=-1)

    @staticmethod
    def backward(ctx, grad):
        lo = ctx.rank * ctx.width
        return grad[..., lo : lo + ctx.width].contiguous(), None, None, None


def _init_weight(weight: torch.Tensor, bias: torch.Tensor | None, fan_in: int) -> None:
    # The same bound as nn.Linear's default, computed from the full fan-in so a sharded layer's
    # random initialisation has the statistics of the unsharded one.
    bound = 1.0 / fan_in**0.5
    with torch.no_grad():
        weight.uniform_(-bound, bound)
        if bias is not None:
            bias.uniform_(-bound, bound)


class ColumnParallelLinear(torch.nn.Module):
    """y = x A^T + b with A's rows (output features) split over the group: this rank holds
    ``weight[out_features // tp, in_features]`` and ``bias[out_features // tp]``. forward returns
    the local slice of the output, or the full output (all-gathered along the last dim, ranks in
    order) when ``gather_output``. The input is the same on every rank; in backward its gradient
    is summed over the ranks (one all_reduce), so layers before this one train as unsharded."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        group,
        bias: bool = True,
        gather_output: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.group = group
        self.tp = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.in_features = in_features
        self.out_features = out_features
        self.out_per_rank = _divide(out_features, self.tp, "out_features", "ColumnParallelLinear")
        self.gather_output = gather_output
        kw = {"device": device, "dtype": dtype}
        self.weight = torch.nn.Parameter(torch.empty(self.out_per_rank, in_features, **kw))
        self.bias = torch.nn.Parameter(torch.empty(self.out_per_rank, **kw)) if bias else None
        _init_weight(self.weight, self.bias, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp > 1 and torch.is_grad_enabled() and x.requires_grad:
            x = _ReplicatedInput.apply(x, self.group)
        y = torch.nn.functional.linear(x, self.weight, self.bias)
        if not self.gather_output or self.tp == 1:
            return y
        return _AllGatherLastDim.apply(y, self.group, self.tp, self.rank)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, tp={self.tp}, "
            f"gather_output={self.gather_output}"
        )


class RowParallelLinear(torch.nn.Module):
    """y = x A^T + b with A's columns (input features) split over the group: this rank holds
    ``weight[out_features, in_features // tp]`` and takes the matching slice of the input (the
    output of a ColumnParallelLinear). forward computes the partial product, completes it with
    ``dist.all_reduce(y, group=group)`` and then adds the full bias once."""

    def __init__(
        self,
        in_features: int,
        out_features: int,
        group,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.group = group
        self.tp = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.in_features = in_features
        self.out_features = out_features
        self.in_per_rank = _divide(in_features, self.tp, "in_features", "RowParallelLinear")
        kw = {"device": device, "dtype": dtype}
        self.weight = torch.nn.Parameter(torch.empty(out_features, self.in_per_rank, **kw))
        self.bias = torch.nn.Parameter(torch.empty(out_features, **kw)) if bias else None
        _init_weight(self.weight, self.bias, in_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.linear(x, self.weight)
        if self.tp > 1:
            y = _AllReduceSum.apply(y, self.group)
        if self.bias is not None:
            y = y + self.bias
        return y

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, tp={self.tp}"


def shard_linear(
    full: torch.nn.Linear, kind: str, group
) -> ColumnParallelLinear | RowParallelLinear:
    """This rank's slice of ``full`` as a ColumnParallelLinear (``kind="column"``: a block of
    output rows and of the bias) or a RowParallelLinear (``kind="row"``: a block of input columns,
    the whole bias), on full's device and dtype, with the weights copied."""
    has_bias = full.bias is not None
    kw = {"device": full.weight.device, "dtype": full.weight.dtype}
    if kind == "column":
        layer = ColumnParallelLinear(
            full.in_features, full.out_features, group, bias=has_bias, **kw
        )
        lo = layer.rank * layer.out_per_rank
        rows = slice(lo, lo + layer.out_per_rank)
        with torch.no_grad():
            layer.weight.copy_(full.weight[rows])
            if has_bias:
                layer.bias.copy_(full.bias[rows])
        return layer
    if kind == "row":
        layer = RowParallelLinear(full.in_features, full.out_features, group, bias=has_bias, **kw)
        lo = layer.rank * layer.in_per_rank
        with torch.no_grad():
            layer.weight.copy_(full.weight[:, lo : lo + layer.in_per_rank])
            if has_bias:
                layer.bias.copy_(full.bias)
        return layer
    raise ValueError(f"shard_linear: kind {kind!r} is not 'column' or 'row'")
