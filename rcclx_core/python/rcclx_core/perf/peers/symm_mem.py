"""``--compare symm_mem``: torch symmetric memory's two all_reduce kernels on GPU tensors:
one-shot (``one_shot_all_reduce_out``: the input in a symmetric buffer, the output an ordinary
tensor) and two-shot (``two_shot_all_reduce_``: in place on the symmetric buffer). all_reduce
with sum only; inputs up to ``BUFFER_BYTES``.
"""

from __future__ import annotations

from rcclx_core.perf.buffers import torch_dtype
from rcclx_core.perf.peers import LABELS, NotApplicable
from rcclx_core.perf.spec import format_bytes

BUFFER_BYTES = 64 << 20  # the symmetric buffer each rank maps (larger inputs print "-")
_DTYPES = ("float32", "bfloat16", "float16")


def unavailable(cfg, world) -> str | None:
    """Why torch symmetric memory cannot run in this run, or None."""
    if cfg.device != "cuda":
        return f"torch symmetric memory runs on GPU buffers (this run is on {cfg.device})"
    if cfg.collective != "all_reduce":
        return f"torch symmetric memory has all_reduce kernels only (not {cfg.collective})"
    if world.gpus_shared:
        return "ranks share a GPU, and symmetric memory (over NCCL's group) needs one per rank"
    try:
        import torch.distributed._symmetric_memory  # noqa: F401 - availability only
    except ImportError as e:
        return f"this torch has no symmetric memory ({e})"
    return None


class _SymmetricInput:
    """The symmetric buffer every rank maps, rendezvoused once over the WORLD group."""

    def __init__(self, cfg, placement):
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        self.group = dist.group.WORLD.group_name
        self.elems = min(BUFFER_BYTES, cfg.maxbytes) // cfg.dtype.itemsize
        self.tensor = symm_mem.empty(
            self.elems, dtype=torch_dtype(placement.torch, cfg.dtype), device=placement.device
        )
        symm_mem.rendezvous(self.tensor, self.group)

    def alloc(self, n: int):
        if n > self.elems:
            raise NotApplicable(f"beyond its {format_bytes(BUFFER_BYTES)} symmetric buffer")
        return self.tensor[:n]


class SymmMemColumn:
    def __init__(self, name: str, cfg, symmetric: _SymmetricInput, torch):
        self.name, self.label = name, LABELS[name]
        self.cfg, self.symmetric, self.ops = cfg, symmetric, torch.ops.symm_mem

    def prepare(self, ws):
        cfg, group = self.cfg, self.symmetric.group
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


def columns(cfg, world, placement) -> list:
    symmetric = _SymmetricInput(cfg, placement)
    return [SymmMemColumn(n, cfg, symmetric, placement.torch) for n in LABELS if "symm" in n]
