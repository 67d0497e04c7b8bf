"""How torchcomms' list and row arguments become what a core call takes: a list of tensors (one
per rank, checked here: the core sees only the flat buffer) becomes one flat buffer, a view when
the tensors already lie back to back in one storage, else one copy in (``packed_input``) or out
(``copy_out``, ``gathered``); split sizes in rows become element counts (``row_counts``).
Shared by the backend and the torch.distributed process group."""

from __future__ import annotations

import math

import torch

import rcclx_core


def check_list(what: str, size: int, name: str, tensors, like=None, numel=None) -> None:
    """A list argument: `size` tensors (one per rank), all of `like`'s dtype (default: the
    first one's), each of `numel` elements when given."""
    if isinstance(tensors, torch.Tensor) or not hasattr(tensors, "__len__"):
        raise TypeError(
            f"{what}: {name} must be a list of {size} tensors (one per rank), got "
            f"{type(tensors).__name__}"
        )
    if len(tensors) != size:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: {name} must be a list of {size} tensors (one per rank), got {len(tensors)}"
        )
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what}: {name}[{i}] must be a torch.Tensor, got {type(t).__name__}")
        like = t if like is None else like
        if t.dtype != like.dtype:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name}[{i}] has dtype {t.dtype}, but the other tensors have {like.dtype}"
            )
        if numel is not None and t.numel() != numel:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name}[{i}] has {t.numel()} elements but needs {numel}"
            )


def row_counts(what: str, name: str, splits, t, scale: int) -> list[int]:
    """Rows per rank (dimension 0 of `t`) as the core's element counts (`scale` core elements
    per tensor element; the core checks how many there are and that they fit)."""
    try:
        rows = [int(s) for s in splits]
    except (TypeError, ValueError):
        raise TypeError(f"{what}: {name} must be a sequence of integers, got {splits!r}") from None
    per_row = (math.prod(t.shape[1:]) if t.dim() else 1) * scale
    return [r * per_row for r in rows]


def numel_list(tensors) -> list[int]:
    """Element counts of `tensors`, in order."""
    return [t.numel() for t in tensors]


def packed(tensors):
    """One flat tensor aliasing `tensors` when they lie back to back in one storage (same
    dtype), else None."""
    t0 = tensors[0]
    storage = t0.untyped_storage()
    base = t0.storage_offset()
    offset = base
    for t in tensors:
        if (
            t.dtype != t0.dtype
            or t.untyped_storage().data_ptr() != storage.data_ptr()
            or t.storage_offset() != offset
        ):
            return None
        offset += t.numel()
    return t0.new_empty(0).set_(storage, base, (offset - base,), (1,))


def packed_input(tensors):
    """`tensors` as one flat input: a view when packed, else their concatenation."""
    flat = packed(tensors)
    return flat if flat is not None else torch.cat([t.detach().reshape(-1) for t in tensors])


def gathered(tensor_list, like, counts):
    """The flat output of a list-form gather (`counts` elements per tensor) and what copies it
    out afterwards (None when the list already lies packed in one storage)."""
    flat = packed(tensor_list)
    if flat is not None:
        return flat, None
    flat = like.new_empty(sum(counts))
    return flat, copy_out(flat, tensor_list, counts)


def copy_out(flat, tensors, counts):
    """A function copying the consecutive pieces of `flat` (`counts` elements each) into
    `tensors`."""

    def finish():
        for t, piece in zip(tensors, flat.split(counts)):
            t.detach().copy_(piece.view(t.shape))

    return finish
