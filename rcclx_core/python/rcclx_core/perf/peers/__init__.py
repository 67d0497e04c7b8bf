"""``--compare``: the peers timed next to our collectives, in the same processes, on the same
inputs and with the same timer, each checked like ours.

A peer is one or more columns (``columns_of``: ``symm_mem`` is one-shot and two-shot for
all_reduce, ``all_to_all_vdev`` for alltoallv_dynamic; ``nccl`` adds its split-sizes-on-the-GPU
path for alltoallv_dynamic). A column has a ``name`` (its key in the JSON), a short ``label``
(its table header) and ``prepare(workspace)``, which returns (call, buffers) or raises
``NotApplicable`` with the reason it cannot run this size, type, op or mode: the table then
prints ``-`` and the reason is listed once at the end. A column with ``eager_only`` is timed
eagerly even in a ``--graph`` run (it cannot be captured; the table says so).
Files: ``dist`` (the torch.distributed calls gloo and nccl share), ``gloo``, ``nccl``,
``symm_mem``, ``unordered`` (RCCLX itself without the fold order).
"""

from __future__ import annotations

PEERS = ("nccl", "symm_mem", "gloo", "unordered")
LABELS = {
    "nccl": "nccl",
    "nccl_sync": "nccl_sync",
    "symm_one_shot": "symm1",
    "symm_two_shot": "symm2",
    "symm_a2av": "a2a_vdev",
    "gloo": "gloo",
    "unordered": "unordered",
}
DESCRIPTIONS = {
    "nccl": "torch.distributed NCCL",
    "nccl_sync": "torch.distributed NCCL with the split sizes on the GPU: the counts exchanged "
    "by all_to_all_single, copied to the host (.tolist(), a sync), then the rows; eager even "
    "with --graph, since a host copy cannot be captured",
    "symm_one_shot": "torch symmetric memory one_shot_all_reduce_out",
    "symm_two_shot": "torch symmetric memory two_shot_all_reduce_",
    "symm_a2av": "torch symmetric memory all_to_all_vdev (NVSHMEM; splits on the GPU)",
    "gloo": "torch.distributed Gloo",
    "unordered": "RCCLX with RCCLX_DETERMINISTIC=0 (partial sums along the ring), the first "
    "--algo of the run",
}
# The collective whose split sizes live with the data: its peers are other calls.
_DYNAMIC = "alltoallv_dynamic"


def columns_of(peer: str, collective: str) -> tuple[str, ...]:
    """The columns ``peer`` brings to a run of ``collective``, in table order."""
    if peer == "nccl":
        return ("nccl", "nccl_sync") if collective == _DYNAMIC else ("nccl",)
    if peer == "symm_mem":
        return ("symm_a2av",) if collective == _DYNAMIC else ("symm_one_shot", "symm_two_shot")
    return (peer,)


class NotApplicable(Exception):
    """The peer cannot run this size, type, op or mode; the message says why."""


class Unavailable:
    """A column whose peer cannot run at all in this run (wrong device, GPUs shared, ...)."""

    def __init__(self, name: str, reason: str):
        self.name, self.label, self.reason = name, LABELS[name], reason

    def prepare(self, ws):
        raise NotApplicable(self.reason)


class PeerSet:
    """The peers' columns of a run, and the torch.distributed group they share (closed by
    ``close``, after the last size)."""

    def __init__(self, columns: list, joined: bool):
        self.columns, self._joined = columns, joined

    def close(self) -> None:
        for column in self.columns:
            getattr(column, "close", lambda: None)()
        if self._joined:
            import torch.distributed as dist

            dist.destroy_process_group()


def open_peers(cfg, world, placement) -> PeerSet:
    """Joins torch.distributed where a peer needs it and makes every requested column."""
    from rcclx_core.perf.peers import gloo, nccl, symm_mem, unordered

    modules = {"nccl": nccl, "symm_mem": symm_mem, "gloo": gloo, "unordered": unordered}
    reasons = {p: modules[p].unavailable(cfg, world) for p in cfg.compare}
    runnable = [p for p in cfg.compare if reasons[p] is None and p != "unordered"]
    # Ranks sharing a GPU cannot form an NCCL group: symmetric memory rendezvouses over Gloo.
    backend = "gloo" if "gloo" in runnable or world.gpus_shared else "nccl"
    backend = backend if runnable else None
    if backend is not None:
        world.dist_init(backend)
    columns: list = []
    for peer in cfg.compare:
        if reasons[peer] is not None:
            names = columns_of(peer, cfg.collective)
            columns += [Unavailable(c, reasons[peer]) for c in names]
        elif world.gpus_shared:
            columns += _shared_gpu_columns(modules[peer], peer, cfg, world, placement)
        else:
            columns += modules[peer].columns(cfg, world, placement)
    return PeerSet(columns, backend is not None)


def _shared_gpu_columns(module, peer: str, cfg, world, placement) -> list:
    """A peer's columns where ranks share a GPU, or its refusal: a peer made for one GPU per
    rank may fail to set up there (its reason is printed instead of its times)."""
    try:
        return module.columns(cfg, world, placement)
    except Exception as e:  # noqa: BLE001 - the peer's refusal, printed in its column
        reason = f"fails with ranks sharing a GPU: {type(e).__name__}: {e}".splitlines()[0]
        return [Unavailable(c, reason) for c in columns_of(peer, cfg.collective)]
