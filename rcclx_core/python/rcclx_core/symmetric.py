"""Symmetric buffers: device memory that every rank of a GPU communicator maps.

``comm.alloc_symmetric(nbytes)`` is collective (every rank passes the same size) and returns a
:class:`SymmetricBuffer`. An allreduce whose output lies in one, at the same offset on every
rank, stores its all-gather straight into the peers' outputs instead of going through the
communicator's staging, which saves a copy of the output at large sizes. Views come through
``__cuda_array_interface__`` (``buf.as_tensor(torch.bfloat16, (n,))``, ``cupy.asarray(buf)``).
"""

from __future__ import annotations

import math

from ctran import InvalidUsageError


class SymmetricBuffer:
    """``nbytes`` of device memory on ``device``, mapped by every rank of ``comm``.

    The memory lives until :meth:`free` (collective) or the communicator's destroy(); views
    taken from it must not be used after that. Every rank must pass outputs at the same offset
    of its buffer to a collective, as with NCCL's symmetric windows."""

    def __init__(self, comm, nbytes: int):
        self._comm = comm
        self.nbytes = int(nbytes)
        self.device = comm.device
        self._ptr: int | None = comm._alloc_symmetric(self.nbytes)

    @property
    def ptr(self) -> int:
        if self._ptr is None:
            raise InvalidUsageError("SymmetricBuffer: the buffer was already freed")
        return self._ptr

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 2}

    def as_tensor(self, dtype=None, shape=None):
        """A torch tensor over the buffer's first bytes: ``dtype`` (default uint8) in ``shape``
        (default: as many elements as fit)."""
        import torch

        t = torch.as_tensor(self, device=torch.device("cuda", self.device))
        if dtype is not None:
            t = t[: self.nbytes - self.nbytes % dtype.itemsize].view(dtype)
        if shape is not None:
            numel = math.prod(shape)
            if numel > t.numel():
                raise ValueError(
                    f"SymmetricBuffer.as_tensor: shape {tuple(shape)} needs {numel} elements, "
                    f"the buffer holds {t.numel()} of {t.dtype}"
                )
            t = t[:numel].view(tuple(shape))
        return t

    def free(self) -> None:
        """Collective: frees the buffer on every rank (after this GPU's queued work)."""
        self._comm._free_symmetric(self.ptr)
        self._ptr = None

    def __repr__(self) -> str:
        state = "freed" if self._ptr is None else f"0x{self._ptr:x}"
        return f"SymmetricBuffer({self.nbytes} bytes on cuda:{self.device}, {state})"


def alloc_symmetric(self, nbytes: int) -> SymmetricBuffer:
    """Collective: a :class:`SymmetricBuffer` of ``nbytes`` on this communicator's GPU."""
    return SymmetricBuffer(self, nbytes)
