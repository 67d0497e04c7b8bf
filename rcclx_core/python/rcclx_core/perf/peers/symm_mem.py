"""``--compare symm_mem``: torch symmetric memory on GPU tensors.

- all_reduce: its two kernels, one-shot (``one_shot_all_reduce_out``: the input in a symmetric
  buffer, the output an ordinary tensor) and two-shot (``two_shot_all_reduce_``: in place on the
  symmetric buffer); sum only; inputs up to ``BUFFER_BYTES``.
- alltoallv_dynamic: ``all_to_all_vdev`` (NVSHMEM): input, output and split tensors in
  symmetric memory, the input split sizes on the GPU, the output's counts and offsets written
  by the op (as ours); up to ``A2AV_BUFFER_BYTES`` per buffer.
"""

from __future__ import annotations

from rcclx_core.perf.buffers import torch_dtype
from rcclx_core.perf.peers import LABELS, NotApplicable, columns_of
from rcclx_core.perf.spec import a2av_counts, format_bytes

BUFFER_BYTES = 64 << 20  # the symmetric buffer each rank maps (larger inputs print "-")
A2AV_BUFFER_BYTES = 256 << 20  # each of all_to_all_vdev's input and output buffers
_DTYPES = ("float32", "bfloat16", "float16")
_COLLECTIVES = ("all_reduce", "alltoallv_dynamic")


def unavailable(cfg, world) -> str | None:
    """Why torch symmetric memory cannot run in this run, or None."""
    if cfg.device != "cuda":
        return f"torch symmetric memory runs on GPU buffers (this run is on {cfg.device})"
    if cfg.collective not in _COLLECTIVES:
        return (
            "torch symmetric memory has all_reduce and all_to_all_vdev kernels only (not "
            f"{cfg.collective})"
        )
    if world.gpus_shared and cfg.collective == "alltoallv_dynamic":
        return "ranks share a GPU, and NVSHMEM (all_to_all_vdev) needs one per rank"
    try:
        import torch.distributed._symmetric_memory as symm_mem
    except ImportError as e:
        return f"this torch has no symmetric memory ({e})"
    if cfg.collective == "alltoallv_dynamic":
        if world.nranks < 2:
            return "all_to_all_vdev's NVSHMEM rendezvous needs 2 or more ranks"
        available = getattr(symm_mem, "is_nvshmem_available", None)
        if available is None or not available():
            return "all_to_all_vdev needs NVSHMEM, which this torch cannot load"
    return None


class _SymmetricPool:
    """A symmetric buffer every rank maps, rendezvoused once over the WORLD group; ``alloc``
    hands out views at offset 0 (one buffer per use at a time)."""

    def __init__(self, symm_mem, group: str, elems: int, dtype, device, limit_bytes: int):
        self.elems, self.limit_bytes = elems, limit_bytes
        self.tensor = symm_mem.empty(elems, dtype=dtype, device=device)
        symm_mem.rendezvous(self.tensor, group)

    def alloc(self, n: int):
        if n > self.elems:
            raise NotApplicable(f"beyond its {format_bytes(self.limit_bytes)} symmetric buffer")
        return self.tensor[:n]


class SymmMemColumn:
    def __init__(self, name: str, cfg, symmetric: _SymmetricPool, group: str, torch):
        self.name, self.label = name, LABELS[name]
        self.cfg, self.symmetric, self.group, self.ops = cfg, symmetric, group, torch.ops.symm_mem

    def prepare(self, ws):
        cfg, group = self.cfg, self.group
        if cfg.redop != "sum":
            raise NotApplicable(f"torch symmetric memory reduces with sum only (not {cfg.redop})")
        if cfg.datatype not in _DTYPES:
            raise NotApplicable(f"torch symmetric memory takes {', '.join(_DTYPES)} only")
        one_shot = self.name == "symm_one_shot"
        bufs = ws.get(not one_shot, self.symmetric.alloc, "symm_mem")
        send, recv = bufs.send, bufs.recv
        if one_shot:
            return lambda: self.ops.one_shot_all_reduce_out(send, "sum", group, recv), bufs
        return lambda: self.ops.two_shot_all_reduce_(send, "sum", group), bufs


class AllToAllVdevColumn:
    """``all_to_all_vdev`` on the run's uneven blocks: input split sizes in a symmetric int64
    tensor on the GPU, the received counts and offsets written by the op into another."""

    name, label = "symm_a2av", LABELS["symm_a2av"]

    def __init__(self, cfg, world, placement, symm_mem, group: str):
        torch = placement.torch
        self.world, self.group, self.torch = world, group, torch
        self.op = torch.ops.symm_mem.all_to_all_vdev
        n, dev = world.nranks, placement.device
        limit = min(A2AV_BUFFER_BYTES, 4 * cfg.maxbytes)
        elems = max(1, limit // cfg.dtype.itemsize)
        dtype = torch_dtype(torch, cfg.dtype)
        self.send_pool = _SymmetricPool(symm_mem, group, elems, dtype, dev, limit)
        self.recv_pool = _SymmetricPool(symm_mem, group, elems, dtype, dev, limit)
        # One (3, n) int64 tensor: row 0 the input splits, rows 1-2 the output's counts and
        # offsets (torch's older single-argument form reads it whole; the newer takes views).
        self.splits = symm_mem.empty((3, n), dtype=torch.int64, device=dev)
        symm_mem.rendezvous(self.splits, group)
        names = [a.name for a in self.op.default._schema.arguments]
        self.combined = "in_out_splits" in names

    def prepare(self, ws):
        n, me = self.world.nranks, self.world.rank
        bufs = ws.get(False, self.send_pool.alloc, "symm_a2av", self.recv_pool.alloc)
        sends = [a2av_counts(ws.count, n, me, d) for d in range(n)]
        self.splits[0].copy_(self.torch.tensor(sends, dtype=self.torch.int64))
        send, recv, splits, group, op = bufs.send, bufs.recv, self.splits, self.group, self.op
        if self.combined:
            return lambda: op(send, recv, splits, group), bufs
        return lambda: op(send, recv, splits[0], splits[1:], group), bufs


def columns(cfg, world, placement) -> list:
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    group = dist.group.WORLD.group_name
    if cfg.collective == "alltoallv_dynamic":
        symm_mem.set_backend("NVSHMEM")
        return [AllToAllVdevColumn(cfg, world, placement, symm_mem, group)]
    torch = placement.torch
    elems = min(BUFFER_BYTES, cfg.maxbytes) // cfg.dtype.itemsize
    dtype = torch_dtype(torch, cfg.dtype)
    pool = _SymmetricPool(symm_mem, group, elems, dtype, placement.device, BUFFER_BYTES)
    return [SymmMemColumn(n, cfg, pool, group, torch) for n in columns_of("symm_mem", "all_reduce")]
