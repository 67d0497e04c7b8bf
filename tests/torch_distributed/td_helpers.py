"""What the torch.distributed backend tests share: joining a group in a rank, inputs every rank
can recompute for every other rank, references of the reductions, and the comparison (exact for
integers, allclose for floats) that reports a problem as text."""

from __future__ import annotations

import datetime

# torch is imported inside functions: the test modules import this file in the parent too.


def init(ctx, port: int, backend: str = "rcclx", timeout_s: float | None = None):
    """Joins torch.distributed through ``tcp://127.0.0.1:port`` as this launch rank; returns
    the torch.distributed module."""
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    kw = {}
    if timeout_s is not None:
        kw["timeout"] = datetime.timedelta(seconds=timeout_s)
    dist.init_process_group(
        backend,
        init_method=f"tcp://127.0.0.1:{port}",
        rank=ctx.rank,
        world_size=ctx.nranks,
        **kw,
    )
    return dist


def reduce_scatter_tensor(dist):
    """reduce_scatter_single on torch >= 2.13, reduce_scatter_tensor before."""
    return getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def all_gather_tensor(dist):
    """all_gather_single on torch >= 2.13, all_gather_into_tensor before."""
    return getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor


def rank_input(rank: int, count: int, dtype, tag: int = 0, device="cpu"):
    """Rank `rank`'s input of `count` elements: small integers (exact under every op, no
    overflow of int8 sums or products over 3 ranks) or normal floats, the same on every rank
    that asks."""
    import torch

    g = torch.Generator().manual_seed(1000 * tag + rank)
    if dtype.is_floating_point:
        x = torch.randn(count, generator=g, dtype=torch.float64) + 0.5
    else:
        x = torch.randint(0, 4, (count,), generator=g, dtype=torch.int64) + 1
    return x.to(dtype).to(device)


def reduce_ref(xs, op: str, factor: float = 1.0):
    """op over the tensors `xs` (floats reduced in float64), in the inputs' dtype."""
    import functools

    import torch

    dtype = xs[0].dtype
    wide = [x.double() if dtype.is_floating_point else x.long() for x in xs]
    if op == "SUM":
        r = functools.reduce(torch.add, wide)
    elif op == "AVG":
        r = functools.reduce(torch.add, wide) / len(xs)
    elif op == "PREMUL_SUM":
        r = functools.reduce(torch.add, [x * factor for x in wide])
    elif op == "PRODUCT":
        r = functools.reduce(torch.mul, wide)
    elif op == "MIN":
        r = functools.reduce(torch.minimum, wide)
    elif op == "MAX":
        r = functools.reduce(torch.maximum, wide)
    elif op == "BAND":
        r = functools.reduce(torch.bitwise_and, wide)
    elif op == "BOR":
        r = functools.reduce(torch.bitwise_or, wide)
    elif op == "BXOR":
        r = functools.reduce(torch.bitwise_xor, wide)
    else:
        raise ValueError(op)
    return r.to(dtype)


def problem(got, want, what: str = "") -> str | None:
    """None when `got` equals `want` (exactly for integers; allclose for floats, bf16 and
    fp16 at their precision), else what differs."""
    import torch

    got, want = got.detach().cpu(), want.detach().cpu()
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{what}got {tuple(got.shape)} {got.dtype}, want {tuple(want.shape)} {want.dtype}"
    if not got.dtype.is_floating_point:
        ok = torch.equal(got, want)
    else:
        rtol = {torch.bfloat16: 2e-2, torch.float16: 2e-3, torch.float32: 1e-5}.get(
            got.dtype, 1e-12
        )
        ok = torch.allclose(got.double(), want.double(), rtol=rtol, atol=rtol)
    if ok:
        return None
    bad = (got != want).reshape(-1).nonzero()
    i = int(bad[0]) if len(bad) else 0
    return f"{what}element {i}: got {got.reshape(-1)[i]}, want {want.reshape(-1)[i]}"


def collect(out: dict, name: str, got, want) -> None:
    """Records case `name` in `out` as (digest "", problem), the shape checks.assert_cases
    takes."""
    out[name] = ("", problem(got, want))


# --- FSDP2 / DDP training: a small model, each rank's batch, and what the ranks compute together


def mlp(torch, device="cpu"):
    """The small MLP the training tests use, with the same weights on every rank."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 16)]
    return torch.nn.Sequential(*layers, torch.nn.Linear(16, 1)).to(device)


def batch_of(torch, rank: int, device="cpu"):
    """Rank `rank`'s training batch (inputs, targets)."""
    g = torch.Generator().manual_seed(100 + rank)
    return torch.randn(32, 16, generator=g).to(device), torch.randn(32, 1, generator=g).to(device)


def one_process_losses(torch, nranks: int, steps: int, lr: float, device="cpu") -> list:
    """What data-parallel training over `nranks` ranks computes, in one process: each step every
    rank's loss on its own batch, the gradients averaged over the ranks, one SGD step. Returns
    each rank's losses (halving a sum of two is exact, so FSDP2 over 2 ranks matches bitwise)."""
    model = mlp(torch, device)
    batches = [batch_of(torch, r, device) for r in range(nranks)]
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = [[] for _ in batches]
    for _ in range(steps):
        grads = []
        for r, (x, y) in enumerate(batches):
            model.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            losses[r].append(loss.item())
            grads.append([p.grad.clone() for p in model.parameters()])
        for p, *gs in zip(model.parameters(), *grads):
            p.grad = sum(gs[1:], gs[0]) / len(gs)
        opt.step()
    return losses


def max_relative_difference(got: list, want: list) -> float:
    return max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got, want, strict=True))
