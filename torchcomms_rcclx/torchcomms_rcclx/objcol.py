"""Object collectives on an rcclx communicator, as torchcomms' ``objcol`` (the same argument
lists, so a program runs on the stand-in and on the real torchcomms alike): picklable Python
objects gathered, broadcast, scattered, sent and received, through byte tensors on the
communicator's device. Objects are written with ``torch.save`` and read with ``torch.load``
(``weights_only=True`` by default: plain containers, numbers, strings and tensors). Every
function is blocking; all_gather and gather move each rank's exact bytes (all_gather_v), the
others one size exchange and then the bytes.

Unpickling runs code the sender chose: use these only between ranks you trust.
"""

from __future__ import annotations

import io
from typing import Any

import torch


def _to_bytes(obj, device) -> torch.Tensor:
    f = io.BytesIO()
    torch.save(obj, f)
    return torch.frombuffer(bytearray(f.getvalue()), dtype=torch.uint8).to(device)


def _from_bytes(t: torch.Tensor, weights_only: bool):
    return torch.load(io.BytesIO(t.cpu().numpy().tobytes()), weights_only=weights_only)


def _sizes(comm, local: int, timeout) -> list[int]:
    """Every rank's byte count."""
    mine = torch.tensor([local], dtype=torch.int64, device=comm.get_device())
    every = torch.empty(comm.get_size(), dtype=torch.int64, device=comm.get_device())
    comm.all_gather_single(every, mine, False, timeout=timeout)
    return every.tolist()


def all_gather_object(comm, object_list: list, obj: Any, timeout=None, weights_only=True) -> None:
    """object_list[r] = rank r's ``obj`` (object_list has one slot per rank)."""
    data = _to_bytes(obj, comm.get_device())
    sizes = _sizes(comm, data.numel(), timeout)
    outs = [torch.empty(s, dtype=torch.uint8, device=data.device) for s in sizes]
    comm.all_gather_v(outs, data, False, timeout=timeout)
    for r, t in enumerate(outs):
        object_list[r] = _from_bytes(t, weights_only)


def gather_object(comm, obj: Any, root: int, object_gather_list: list | None = None,
                  timeout=None, weights_only=True) -> None:  # fmt: skip
    """On ``root``, object_gather_list[r] = rank r's ``obj``."""
    data = _to_bytes(obj, comm.get_device())
    sizes = _sizes(comm, data.numel(), timeout)
    longest = max(sizes)
    padded = torch.zeros(longest, dtype=torch.uint8, device=data.device)
    padded[: data.numel()] = data
    outs = [torch.empty_like(padded) for _ in sizes] if comm.get_rank() == root else []
    comm.gather(outs, padded, root, False, timeout=timeout)
    if comm.get_rank() != root:
        return
    if object_gather_list is None:
        raise ValueError("gather_object: object_gather_list must be a list on the root rank")
    for r, (t, s) in enumerate(zip(outs, sizes)):
        object_gather_list[r] = _from_bytes(t[:s], weights_only)


def broadcast_object_list(comm, object_list: list, root: int, timeout=None,
                          weights_only=True) -> None:  # fmt: skip
    """object_list (the same length on every rank) = root's object_list, in place."""
    dev = comm.get_device()
    data = _to_bytes(list(object_list), dev) if comm.get_rank() == root else None
    size = torch.tensor([0 if data is None else data.numel()], dtype=torch.int64, device=dev)
    comm.broadcast(size, root, False, timeout=timeout)
    if data is None:
        data = torch.empty(int(size.item()), dtype=torch.uint8, device=dev)
    comm.broadcast(data, root, False, timeout=timeout)
    if comm.get_rank() != root:
        got = _from_bytes(data, weights_only)
        if len(got) != len(object_list):
            raise ValueError(
                f"broadcast_object_list: object_list has {len(object_list)} slots but the root "
                f"sent {len(got)} objects"
            )
        object_list[:] = got


def scatter_object_list(comm, root: int, scatter_object_output_list: list,
                        scatter_object_input_list: list | None = None, timeout=None,
                        weights_only=True) -> None:  # fmt: skip
    """scatter_object_output_list[0] = root's scatter_object_input_list[rank]."""
    dev = comm.get_device()
    n = comm.get_size()
    pieces = None
    if comm.get_rank() == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != n:
            raise ValueError(
                f"scatter_object_list: scatter_object_input_list must hold {n} objects on "
                "the root rank"
            )
        pieces = [_to_bytes(o, dev) for o in scatter_object_input_list]
    sizes = torch.tensor([0 if pieces is None else max(p.numel() for p in pieces)],
                         dtype=torch.int64, device=dev)  # fmt: skip
    comm.broadcast(sizes, root, False, timeout=timeout)
    longest = int(sizes.item())
    mine_size = torch.empty(1, dtype=torch.int64, device=dev)
    counts = [torch.tensor([p.numel()], dtype=torch.int64, device=dev) for p in pieces or []]
    comm.scatter(mine_size, counts, root, False, timeout=timeout)
    padded = []
    for p in pieces or []:
        q = torch.zeros(longest, dtype=torch.uint8, device=dev)
        q[: p.numel()] = p
        padded.append(q)
    out = torch.empty(longest, dtype=torch.uint8, device=dev)
    comm.scatter(out, padded, root, False, timeout=timeout)
    scatter_object_output_list[0] = _from_bytes(out[: int(mine_size.item())], weights_only)


def send_object_list(comm, object_list: list, dst: int, timeout=None) -> None:
    """Sends object_list to ``dst`` (which calls recv_object_list with as many slots)."""
    data = _to_bytes(list(object_list), comm.get_device())
    size = torch.tensor([data.numel()], dtype=torch.int64, device=data.device)
    comm.send(size, dst, False, timeout=timeout)
    comm.send(data, dst, False, timeout=timeout)


def recv_object_list(comm, object_list: list, src: int, timeout=None, weights_only=True) -> None:
    """object_list = what ``src`` sent with send_object_list, in place."""
    dev = comm.get_device()
    size = torch.empty(1, dtype=torch.int64, device=dev)
    comm.recv(size, src, False, timeout=timeout)
    data = torch.empty(int(size.item()), dtype=torch.uint8, device=dev)
    comm.recv(data, src, False, timeout=timeout)
    got = _from_bytes(data, weights_only)
    if len(got) != len(object_list):
        raise ValueError(
            f"recv_object_list: object_list has {len(object_list)} slots but rank {src} sent "
            f"{len(got)} objects"
        )
    object_list[:] = got


__all__ = [
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "recv_object_list",
    "scatter_object_list",
    "send_object_list",
]
