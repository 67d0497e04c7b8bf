"""The tensor-parallel linear layers (rcclx_benchmarks.e2e.tensor_parallel) on 2 and 3 CPU
processes over the "rcclx" backend: a full nn.Linear sharded column-wise (local slice and
gathered output) and row-wise gives the full layer's output within float rounding, a
column -> row chain does too (and its gradients, of the input and of each shard, are the full
chain's), and a size that is not a multiple of the group size is refused with a message naming
the argument and the value."""

import importlib.util

import checks
import pytest

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)


def _close(out, name, got, ref):
    import torch

    err = (got - ref).abs().max().item()
    ok = torch.allclose(got, ref, atol=1e-5, rtol=1e-5)
    out[name] = ("", None if ok else f"max err {err:.3g}")


def _init(ctx, port):
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    dist.init_process_group(
        "rcclx", init_method=f"tcp://127.0.0.1:{port}", rank=ctx.rank, world_size=ctx.nranks
    )
    return dist


def _tp_rank(ctx, port):
    import torch

    from rcclx_benchmarks.e2e.tensor_parallel import (
        ColumnParallelLinear,
        RowParallelLinear,
        shard_linear,
    )

    dist = _init(ctx, port)
    group = dist.group.WORLD
    tp, rank = ctx.nranks, ctx.rank
    torch.manual_seed(0)  # the same full layers and input on every rank
    up = torch.nn.Linear(10, 4 * tp)
    down = torch.nn.Linear(4 * tp, 7)
    x = torch.randn(3, 5, 10)
    out = {}
    col = shard_linear(up, "column", group)
    assert isinstance(col, ColumnParallelLinear) and col.weight.shape == (4, 10)
    _close(out, "column slice", col(x), up(x)[..., 4 * rank : 4 * rank + 4])
    col.gather_output = True
    _close(out, "column gathered", col(x), up(x))
    col.gather_output = False
    row = shard_linear(down, "row", group)
    assert isinstance(row, RowParallelLinear) and row.weight.shape == (7, 4)
    _close(out, "row", row(up(x)[..., 4 * rank : 4 * rank + 4]), down(up(x)))
    _close(out, "column -> row", row(torch.relu(col(x))), down(torch.relu(up(x))))
    # Backward: the input's gradient through column -> row is the full chain's (summed over
    # the ranks' weight slices), and each shard's weight gradient is the full one's slice.
    xs, xf = x.clone().requires_grad_(), x.clone().requires_grad_()
    row(torch.relu(col(xs))).square().sum().backward()
    down(torch.relu(up(xf))).square().sum().backward()
    _close(out, "input gradient", xs.grad, xf.grad)
    _close(out, "column weight gradient", col.weight.grad, up.weight.grad[4 * rank : 4 * rank + 4])
    _close(
        out, "row weight gradient", row.weight.grad, down.weight.grad[:, 4 * rank : 4 * rank + 4]
    )
    for make, arg in (
        (lambda: ColumnParallelLinear(8, 4 * tp + 1, group), "out_features"),
        (lambda: RowParallelLinear(4 * tp + 1, 8, group), "in_features"),
    ):
        try:
            make()
            problem = "no error"
        except ValueError as e:
            problem = None if f"{arg} {4 * tp + 1}" in str(e) else f"message {e}"
        out[f"refuses {arg}"] = ("", problem)
    try:
        shard_linear(up, "diagonal", group)
        out["refuses kind"] = ("", "no error")
    except ValueError:
        out["refuses kind"] = ("", None)
    dist.destroy_process_group()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_sharded_layers_match_full(nranks):
    checks.assert_cases(launch(_tp_rank, nranks, checks.free_port(), timeout=120))
