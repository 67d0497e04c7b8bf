"""How a list of tensors becomes the one flat buffer a core call takes: a view when the tensors
already lie back to back in one storage, else one copy in (``packed_input``) or out
(``copy_out``). Shared by the torchcomms communicator and the torch.distributed process group."""

from __future__ import annotations

import torch


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


def copy_out(flat, tensors, counts):
    """A function copying the consecutive pieces of `flat` (`counts` elements each) into
    `tensors`."""

    def finish():
        for t, piece in zip(tensors, flat.split(counts)):
            t.detach().view(-1).copy_(piece)

    return finish
