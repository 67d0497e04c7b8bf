"""DDP on the "rcclx" backend trains as it does on Gloo: a small model (Linear 16->16->1,
fixed seed, fixed data per rank) for 50 steps on 2 CPU processes, once per backend in the same
launch; every step's loss agrees within 1e-6 relative, and so do the final parameters. Once more
with a comm hook that chains on the Work's future (the fp16 compression hook)."""

import importlib.util

import checks
import pytest
import td_helpers as H

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

STEPS = 50


def _train(dist, torch, backend: str, rank: int, hook: bool, device: str = "cpu"):
    """Trains the model for STEPS steps through a new group of `backend`; the losses and the
    final parameters."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    group = dist.new_group(backend=backend)
    assert dist.get_backend(group) == backend, dist.get_backend(group)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)
    ).to(device)
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001)  # several buckets
    if hook:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        ddp.register_comm_hook(group, default_hooks.fp16_compress_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    x, y = torch.randn(32, 16, generator=g), torch.randn(32, 1, generator=g)
    x, y = x.to(device), y.to(device)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).cpu()
    return losses, params


def _ddp_rank(ctx, port):
    import torch

    dist = H.init(ctx, port, backend="cpu:gloo")
    out = {}
    for hook in (False, True):
        got_l, got_p = _train(dist, torch, "rcclx", ctx.rank, hook)
        ref_l, ref_p = _train(dist, torch, "gloo", ctx.rank, hook)
        rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(got_l, ref_l))
        name = "fp16 hook" if hook else "default"
        out[f"{name} losses"] = ("", None if rel <= 1e-6 else f"relative difference {rel:.3g}")
        out[f"{name} learned"] = ("", None if got_l[-1] < got_l[0] else "loss did not fall")
        H.collect(out, f"{name} params", got_p, ref_p)
    dist.destroy_process_group()
    return out


def test_ddp_matches_gloo():
    results = launch(_ddp_rank, 2, checks.free_port(), timeout=120)
    checks.assert_cases(results)
