"""init_device_mesh over rcclx communicators (``torchcomms.device_mesh``: the real torchcomms'
where installed, else the stand-in's): a 2 x 2 mesh of 4 ranks whose dimensions are split
communicators; torch.distributed calls on the mesh's groups reach them (sums over each dimension
checked exactly), DTensor redistributes over the mesh; the bad calls of RCCLX's own
init_device_mesh raise."""

from __future__ import annotations

import checks
import pytest
import tc_helpers as H

from launcher import launch

torch = pytest.importorskip("torch")


def _mesh_rank(ctx):
    import torch.distributed as dist
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
    from torchcomms.device_mesh import init_device_mesh

    world = H.comm_of(ctx, "world")
    me = world.get_rank()
    i, j = divmod(me, 2)  # mesh coordinates: rank = 2 i + j
    dp = world.split([j, 2 + j], "dp")  # along dimension 0: the ranks sharing j
    tp = world.split([2 * i, 2 * i + 1], "tp")  # along dimension 1: the ranks sharing i
    mesh = init_device_mesh((dp, tp), ("dp", "tp"), _global_comm=world)
    out = {}
    out["global rank"] = ("", None if dist.get_rank() == me else f"got {dist.get_rank()}")
    coordinate = mesh.get_coordinate()
    out["mesh coordinate"] = ("", None if list(coordinate) == [i, j] else f"got {coordinate}")
    for name, members in (("dp", [j, 2 + j]), ("tp", [2 * i, 2 * i + 1])):
        t = torch.full((8,), float(me + 1))
        dist.all_reduce(t, group=mesh.get_group(name))
        out[f"all_reduce over {name}"] = (
            "",
            H.compare(t, torch.full((8,), float(sum(r + 1 for r in members)))),
        )
        out[f"{name} size"] = ("", None if mesh[name].size() == 2 else str(mesh[name].size()))
    full = torch.arange(16, dtype=torch.float32).view(4, 4)
    sharded = distribute_tensor(full, mesh, [Shard(0), Shard(1)])
    want_local = full[2 * i : 2 * i + 2, 2 * j : 2 * j + 2]
    out["DTensor local shard"] = ("", H.compare(sharded.to_local(), want_local))
    gathered = sharded.redistribute(mesh, [Replicate(), Replicate()]).to_local()
    out["DTensor redistribute"] = ("", H.compare(gathered, full))
    dist.destroy_process_group()
    if not H.REAL_TORCHCOMMS:  # the real torchcomms' groups finalize the communicators they wrap
        t = torch.ones(2)
        dp.all_reduce(t, H.op_of("SUM"), False)
        out["comms stay open"] = ("", H.compare(t, torch.full((2,), 2.0)))
    for c in (dp, tp, world):
        c.finalize()
    return out


def test_device_mesh_2x2():
    checks.assert_cases(launch(_mesh_rank, 4, timeout=90), same_on_all_ranks=False)


def _errors_rank(ctx):
    from torchcomms_rcclx.device_mesh import init_device_mesh

    world = H.comm_of(ctx, "world")
    me = world.get_rank()
    half = world.split([0, 1] if me < 2 else [2, 3], "half")
    out = {}
    for what, call, text in (
        ("no global comm", lambda: init_device_mesh((half, half), ("a", "b")), "_global_comm"),
        ("names", lambda: init_device_mesh((world,), ("a", "b")), "2 mesh_dim_names"),
        ("repeated", lambda: init_device_mesh((half, half), ("a", "a"), world), "repeat"),
        ("sizes", lambda: init_device_mesh((half,), ("a",), world), "holds 2"),
        ("not a comm", lambda: init_device_mesh(("x",), ("a",)), "rcclx communicators"),
    ):
        try:
            call()
            out[what] = ("", "did not raise")
        except (TypeError, ValueError) as e:
            out[what] = ("", None if text in str(e) else str(e))
    half.finalize()
    world.finalize()
    return out


def test_device_mesh_errors():
    checks.assert_cases(launch(_errors_rank, 4, timeout=60))
