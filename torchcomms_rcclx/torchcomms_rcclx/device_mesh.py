"""A torch ``DeviceMesh`` over communicators, as torchcomms' ``init_device_mesh``.

    world = torchcomms_rcclx.new_comm("rcclx", device, "world")
    dp = world.split(dp_ranks, "dp")      # the ranks sharing this rank's tp index
    tp = world.split(tp_ranks, "tp")
    mesh = init_device_mesh((dp, tp), ("dp", "tp"), _global_comm=world)
    fully_shard(model, mesh=mesh["dp"])    # FSDP2, DTensor and tensor parallelism take the mesh

Each communicator becomes a ``torch.distributed`` process group of backend ``"rcclx"`` (a
:class:`~torchcomms_rcclx.c10d.process_group.ProcessGroupRcclx` over it, registered under the
dimension's name) and ``_global_comm``'s group becomes the default group, so
``torch.distributed`` calls and the mesh's ``get_group`` reach the communicators given here.
The communicators stay the caller's: ``destroy_process_group`` leaves them open.

Registering a group that ``init_process_group`` did not create uses torch.distributed's
private tables; this module fills them the way torch's own group creation does.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d as c10d

import rcclx_core
from torchcomms_rcclx import c10d as _registration  # noqa: F401 - registers "rcclx"
from torchcomms_rcclx._backend import TorchCommRCCLX
from torchcomms_rcclx.c10d.process_group import ProcessGroupRcclx

_BACKEND = "rcclx"


def _register(comm: TorchCommRCCLX, group_name: str, ranks: list[int]) -> ProcessGroupRcclx:
    """`comm` as a process group named `group_name` whose members are the global `ranks`."""
    pg = ProcessGroupRcclx.from_comm(comm, group_name)
    pg._set_group_name(group_name)
    mapping = {g: i for i, g in enumerate(ranks)}
    store = dist.HashStore()  # the group never rendezvouses again: a placeholder for torch
    config = str(dist.BackendConfig(dist.Backend(_BACKEND)))
    register = getattr(c10d, "_register_pg_in_world", None)
    if register is not None:
        register(pg, _BACKEND, store, group_name, config, rank_mapping=mapping)
        return pg
    world = c10d._world
    world.pg_map[pg] = (_BACKEND, store)
    world.pg_names[pg] = group_name
    world.pg_backend_config[pg] = config
    world.pg_group_ranks[pg] = mapping
    tag = f"ptd:{group_name}"
    world.tags_to_pg.setdefault(tag, []).append(pg)
    world.pg_to_tag[pg] = tag
    c10d._register_process_group(group_name, pg)
    return pg


def _backend(comm):
    """The rcclx backend of `comm` (a TorchComm of the stand-in, or the backend itself)."""
    backend = comm.get_backend_impl() if hasattr(comm, "get_backend_impl") else comm
    return backend if isinstance(backend, TorchCommRCCLX) else None


def _check(mesh_dim_comms, mesh_dim_names, global_comm) -> None:
    if not mesh_dim_comms or not all(isinstance(c, TorchCommRCCLX) for c in mesh_dim_comms):
        raise TypeError(
            "init_device_mesh: mesh_dim_comms must be a non-empty tuple of rcclx communicators, "
            f"got {mesh_dim_comms!r}"
        )
    if len(mesh_dim_names) != len(mesh_dim_comms):
        raise rcclx_core.InvalidArgumentError(
            f"init_device_mesh: {len(mesh_dim_names)} mesh_dim_names {tuple(mesh_dim_names)} "
            f"for {len(mesh_dim_comms)} communicators"
        )
    if len(set(mesh_dim_names)) != len(mesh_dim_names):
        raise rcclx_core.InvalidArgumentError(
            f"init_device_mesh: mesh_dim_names {tuple(mesh_dim_names)} repeat a name"
        )
    if global_comm is None and len(mesh_dim_comms) > 1:
        raise rcclx_core.InvalidArgumentError(
            "init_device_mesh: a mesh of more than one dimension needs _global_comm, the "
            "communicator of every rank"
        )
    devices = {str(c.get_device()) for c in mesh_dim_comms}
    if len(devices) != 1:
        raise rcclx_core.InvalidArgumentError(
            f"init_device_mesh: the communicators run on different devices {sorted(devices)}"
        )
    size = math.prod(c.get_size() for c in mesh_dim_comms)
    if global_comm is not None and global_comm.get_size() != size:
        raise rcclx_core.InvalidArgumentError(
            f"init_device_mesh: _global_comm has {global_comm.get_size()} ranks, but the mesh "
            f"{tuple(c.get_size() for c in mesh_dim_comms)} holds {size}"
        )


def init_device_mesh(
    mesh_dim_comms: tuple,
    mesh_dim_names: tuple[str, ...],
    _global_comm=None,
) -> dist.DeviceMesh:
    """A DeviceMesh whose dimension i is carried by ``mesh_dim_comms[i]`` (rcclx
    communicators: the stand-in's TorchComm, or the backend).

    The mesh is row-major over the global ranks: the rank at mesh coordinates (i0, i1, ...)
    is ``i0 * size1 * size2 ... + i1 * size2 ... + ...``, and each communicator's rank must be
    this rank's coordinate along its dimension (split the global communicator so). One
    communicator alone may stand for the whole mesh (then it is the global one too).
    """
    mesh_dim_comms = tuple(_backend(c) or c for c in mesh_dim_comms or ())
    _global_comm = None if _global_comm is None else _backend(_global_comm) or _global_comm
    _check(mesh_dim_comms, mesh_dim_names, _global_comm)
    shape = tuple(c.get_size() for c in mesh_dim_comms)
    mesh = torch.arange(math.prod(shape), dtype=torch.int).view(shape)
    coords = tuple(c.get_rank() for c in mesh_dim_comms)
    rank = int(mesh[coords].item())
    if _global_comm is not None and _global_comm.get_rank() != rank:
        raise rcclx_core.InvalidArgumentError(
            f"init_device_mesh: this rank is {_global_comm.get_rank()} of _global_comm but sits "
            f"at {coords} of the mesh {shape}, which is rank {rank}"
        )

    world = None
    if _global_comm is not None:
        world = _register(_global_comm, _global_comm.get_name(), list(range(mesh.numel())))
    for dim, (comm, name) in enumerate(zip(mesh_dim_comms, mesh_dim_names)):
        # The global ranks along `dim` through this rank: its row of the mesh moved to `dim`.
        index = list(coords)
        index[dim] = slice(None)
        ranks = mesh[tuple(index)].tolist()
        pg = _register(comm, name, ranks)
        world = world or pg
    set_default = getattr(c10d, "_update_default_pg", None)
    if set_default is not None:
        set_default(world)
    else:
        c10d.GroupMember.WORLD = world
    # torch 2.8 takes no _rank: it asks the default group, registered above.
    takes_rank = "_rank" in inspect.signature(dist.DeviceMesh.__init__).parameters
    device_mesh = dist.DeviceMesh(
        mesh_dim_comms[0].get_device().type,
        mesh,
        mesh_dim_names=tuple(mesh_dim_names),
        _init_backend=False,
        **({"_rank": rank} if takes_rank else {}),
    )
    device_mesh._dim_group_names = list(mesh_dim_names)
    return device_mesh


__all__ = ["init_device_mesh"]
