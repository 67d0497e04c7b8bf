"""torch.distributed through the real torchcomms: with torch's routing on
(``torch.distributed.config.use_torchcomms``, ``TORCH_DISTRIBUTED_USE_TORCHCOMMS=1``),
``init_process_group("cpu:rcclx")`` creates its groups with ``torchcomms.new_comm("rcclx")``
and wraps them in torchcomms' C++ ``_BackendWrapper``, which calls the rcclx backend. Checked on
2 and 3 CPU ranks: the collectives torch.distributed routes there (PREMUL_SUM's factor
included), ``new_group`` / ``split_group`` (torchcomms' split), the functional collectives;
DDP's losses equal Gloo's; FSDP2 over ``torchcomms.device_mesh.init_device_mesh`` equals the
one-process reference, with the default AVG and with a gradient divide factor that makes it
reduce-scatter with PREMUL_SUM; ``torch.compile(fullgraph=True)`` of torchcomms' functional
collectives. Skipped without the real torchcomms (``nox -s tests`` runs it in its second pass)."""

from __future__ import annotations

import importlib.util
import os

import checks
import pytest
import td_helpers as H

from launcher import launch

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)

# torch.distributed first: imported while torchcomms initialises, it would find torchcomms
# half-made and turn its routing off for the process.
import torch.distributed  # noqa: E402, F401
import torchcomms  # noqa: E402

if getattr(torchcomms, "STANDIN", None) is not None:
    pytest.skip(
        "needs the real torchcomms (nox -s tests installs it for its second pass)",
        allow_module_level=True,
    )

STEPS = 10
LR = 0.05


def _routed(ctx, port):
    """torch.distributed initialised with "cpu:rcclx" routed through torchcomms."""
    import torch.distributed as dist
    import torch.distributed.config

    import torchcomms_rcclx.c10d  # noqa: F401 - the name "rcclx" for torch.distributed

    # Our backend takes its rank from the launcher's environment, as torchcomms' own do.
    os.environ.update(RANK=str(ctx.rank), WORLD_SIZE=str(ctx.nranks))
    torch.distributed.config.use_torchcomms = True
    dist.init_process_group(
        "cpu:rcclx", init_method=f"tcp://127.0.0.1:{port}", rank=ctx.rank, world_size=ctx.nranks
    )
    return dist


def _collectives_rank(ctx, port):
    dist = _routed(ctx, port)
    import torch
    from torch.distributed import _functional_collectives as funcol
    from torchcomms._comms import _BackendWrapper

    from torchcomms_rcclx import TorchCommRCCLX

    n, me = ctx.nranks, ctx.rank
    out = {}
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    impl = backend.get_comm().get_backend_impl() if isinstance(backend, _BackendWrapper) else None
    out["routed to the rcclx backend"] = (
        "",
        None if isinstance(impl, TorchCommRCCLX) else f"backend {backend!r}, impl {impl!r}",
    )
    xs = [H.rank_input(r, 1000, torch.float32, tag=1) for r in range(n)]
    for op in ("SUM", "AVG", "MAX", "MIN"):
        t = xs[me].clone()
        dist.all_reduce(t, op=getattr(dist.ReduceOp, op))
        H.collect(out, f"all_reduce {op}", t, H.reduce_ref(xs, op))
    t = xs[me].clone()
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.25))
    H.collect(out, "all_reduce PREMUL_SUM(0.25)", t, H.reduce_ref(xs, "PREMUL_SUM", 0.25))
    work = dist.all_reduce(t := xs[me].clone(), async_op=True)
    work.wait()
    H.collect(out, "all_reduce async", t, H.reduce_ref(xs, "SUM"))
    fut_t = xs[me].clone()
    fut = dist.all_reduce(fut_t, async_op=True).get_future()
    H.collect(out, "all_reduce future", fut.wait()[0], H.reduce_ref(xs, "SUM"))
    mask = torch.tensor([me == 0, False, me == n - 1])
    dist.all_reduce(mask)  # bool: an OR
    H.collect(out, "all_reduce bool", mask, torch.tensor([True, False, True]))
    gathered = torch.empty(n * 1000)
    dist.all_gather_into_tensor(gathered, xs[me])
    H.collect(out, "all_gather_into_tensor", gathered, torch.cat(xs))
    big = [H.rank_input(r, 4 * n, torch.float32, tag=2) for r in range(n)]
    got = torch.empty(4)
    dist.reduce_scatter_tensor(got, big[me], op=dist._make_nccl_premul_sum(0.5))
    want = H.reduce_ref(big, "PREMUL_SUM", 0.5)[4 * me : 4 * me + 4]
    H.collect(out, "reduce_scatter_tensor PREMUL_SUM(0.5)", got, want)
    t = xs[me].clone()
    dist.broadcast(t, src=n - 1)
    H.collect(out, "broadcast", t, xs[n - 1])
    a2a = torch.empty(4 * n)
    dist.all_to_all_single(a2a, big[me])
    H.collect(out, "all_to_all_single", a2a, torch.cat([b[4 * me : 4 * me + 4] for b in big]))
    dist.barrier()
    # Groups: torch splits the world's torchcomms communicator (non-members pass []).
    members = list(range(n - 1)) if n > 2 else [0, 1]
    group = dist.new_group(members)
    if me in members:
        t = torch.full((3,), float(me + 1))
        dist.all_reduce(t, group=group)
        H.collect(out, "new_group all_reduce", t, torch.full((3,), float(sum(members) + 2)))
    else:
        outside = group is dist.GroupMember.NON_GROUP_MEMBER
        out["new_group all_reduce"] = ("", None if outside else f"a non-member got {group!r}")
    # torch's functional collectives (what tensor parallelism calls).
    r = funcol.all_reduce(xs[me].clone(), "sum", dist.group.WORLD)
    H.collect(out, "funcol all_reduce", funcol.wait_tensor(r), H.reduce_ref(xs, "SUM"))
    dist.destroy_process_group()
    return out


@pytest.mark.parametrize("nranks", [2, 3])
def test_collectives_route_through_torchcomms(nranks):
    results = launch(_collectives_rank, nranks, checks.free_port(), timeout=120)
    checks.assert_cases(results, same_on_all_ranks=False)


def _ddp_losses(torch, group, rank):
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = H.mlp(torch)
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=LR)
    x, y = H.batch_of(torch, rank)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()


def _mesh_group(ctx, name: str):
    """This rank's group of a one-dimensional device mesh made by torchcomms' own
    init_device_mesh over ``torchcomms.new_comm("rcclx")``."""
    import torch
    from tc_store import LaunchStore
    from torchcomms.device_mesh import init_device_mesh

    os.environ.update(TORCHCOMM_RANK=str(ctx.rank), TORCHCOMM_SIZE=str(ctx.nranks))
    comm = torchcomms.new_comm("rcclx", torch.device("cpu"), name, store=LaunchStore(ctx))
    return init_device_mesh((comm,), ("dp",))


def _ddp_rank(ctx, port, how: str):
    """DDP's losses and final parameters over "cpu:rcclx" routed through torchcomms, over a
    torchcomms device mesh, or on Gloo (torch 2.13 makes every group of a routed process one of
    the world's backend: Gloo runs in a launch of its own)."""
    import torch

    if how == "routed":
        dist = _routed(ctx, port)
        group = dist.group.WORLD
    elif how == "mesh":
        group = _mesh_group(ctx, "ddp").get_group("dp")
    else:
        group = H.init(ctx, port, backend="gloo").group.WORLD
    got = _ddp_losses(torch, group, ctx.rank)
    torch.distributed.destroy_process_group()
    return got


@pytest.mark.parametrize("how", ["routed", "mesh"])
def test_ddp_through_torchcomms_matches_gloo(how):
    ours = launch(_ddp_rank, 2, checks.free_port(), how, timeout=120)
    gloo = launch(_ddp_rank, 2, checks.free_port(), "gloo", timeout=120)
    for rank, (mine, theirs) in enumerate(zip(ours, gloo)):
        (losses, params), (ref_losses, ref_params) = mine.value, theirs.value
        rel = H.max_relative_difference(losses, ref_losses)
        assert rel <= 1e-6, f"rank {rank}: losses differ from Gloo's by {rel:.3g} (relative)"
        assert H.max_relative_difference(params, ref_params) <= 1e-5, f"rank {rank}: params"


def _fsdp_rank(ctx, port, divide_factor, how: str):
    """FSDP2's losses over a torchcomms device mesh (or, for reference, Gloo's)."""
    import torch
    from torch.distributed.fsdp import fully_shard

    if how == "mesh":
        mesh = _mesh_group(ctx, "fsdp")
    else:
        from torch.distributed.device_mesh import init_device_mesh

        H.init(ctx, port, backend="gloo")
        mesh = init_device_mesh("cpu", (ctx.nranks,), mesh_dim_names=("dp",))
    model = H.mlp(torch)
    units = [layer for layer in model if isinstance(layer, torch.nn.Linear)] + [model]
    for unit in units:
        fully_shard(unit, mesh=mesh)
        if divide_factor is not None:
            unit.set_gradient_divide_factor(divide_factor)  # a PREMUL_SUM(1 / factor)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = H.batch_of(torch, ctx.rank)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    torch.distributed.destroy_process_group()
    return losses


@pytest.mark.parametrize("divide_factor", [None, 4.0], ids=["avg", "premul_sum"])
def test_fsdp2_over_a_torchcomms_device_mesh(divide_factor):
    """Against Gloo's FSDP2 with the default AVG; with a divide factor (PREMUL_SUM, which Gloo
    does not reduce) against the one-process reference: dividing the summed gradients by
    k * nranks instead of nranks is SGD at lr / k."""
    import torch

    n = 2
    ours = [r.value for r in launch(_fsdp_rank, n, 0, divide_factor, "mesh", timeout=120)]
    if divide_factor is None:
        refs = [r.value for r in launch(_fsdp_rank, n, checks.free_port(), None, "gloo")]
    else:
        refs = H.one_process_losses(torch, n, STEPS, LR * n / divide_factor)
    for rank, (losses, ref) in enumerate(zip(ours, refs)):
        rel = H.max_relative_difference(losses, ref)
        assert rel <= 1e-6, f"rank {rank}: losses differ from the reference by {rel:.3g}"
        assert losses[-1] < losses[0], f"rank {rank}: the loss did not fall"


def _compile_rank(ctx):
    """torch.compile(fullgraph=True) of a function calling torchcomms' collectives: they trace
    into torchcomms' ops (its functional layer, on when TORCHCOMMS_PATCH_FOR_COMPILE=1 before it
    is imported: a fresh interpreter), which call the rcclx backend."""
    import ast
    import subprocess
    import sys

    code = f"""
import os
os.environ["TORCHCOMMS_PATCH_FOR_COMPILE"] = "1"
import torch, torchcomms, tc_store
n = {ctx.nranks}
comm = torchcomms.new_comm("rcclx", torch.device("cpu"), "compiled", store=tc_store.connect(
    {ctx.store_host!r}, {ctx.store_port}))
def f(x):
    y = x * 2
    comm.all_reduce(y, torchcomms.ReduceOp.SUM, False)
    out = torch.empty(n * y.numel())
    comm.all_gather_single(out, y, False)
    return out + 1
x = torch.full((4,), float({ctx.rank} + 1))
print(repr((torch.compile(f, fullgraph=True)(x).tolist(), f(x.clone()).tolist())))
comm.finalize()
"""
    env = {**os.environ, "TORCHCOMM_RANK": str(ctx.rank), "TORCHCOMM_SIZE": str(ctx.nranks)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*sys.path,) if p)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=240
    )
    if done.returncode:
        raise RuntimeError(done.stderr[-3000:])
    compiled, eager = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    n = ctx.nranks
    want = [2.0 * n * (n + 1) / 2 + 1] * (4 * n)
    return {
        "compiled = eager = reference": ("", None if compiled == eager == want else done.stdout)
    }


def test_torch_compile_fullgraph_over_torchcomms_functional_collectives():
    checks.assert_cases(launch(_compile_rank, 2, timeout=300))
