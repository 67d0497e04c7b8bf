"""Symmetric buffers: device memory that every rank of a GPU communicator maps.

``comm.alloc_symmetric(nbytes)`` allocates one; ``comm.register_symmetric(tensor)`` makes the
memory of an existing CUDA tensor one (the memory stays the tensor's). Both are collective
(every rank passes the same size) and return a :class:`SymmetricBuffer`. An allreduce whose
output lies in one, at the same offset on every rank, stores its all-gather straight into the
peers' outputs instead of going through the communicator's staging, which saves a copy of the
output at large sizes. Views come through ``__cuda_array_interface__``
(``buf.as_tensor(torch.bfloat16, (n,))``, ``cupy.asarray(buf)``).
"""

from __future__ import annotations

import math

from ctran import InvalidArgumentError, InvalidUsageError


class SymmetricBuffer:
    """``nbytes`` of device memory on ``device``, mapped by every rank of ``comm``: allocated
    (``source`` None) or ``source``'s own memory (registered).

    Allocated memory lives until :meth:`free` (collective) or the communicator's destroy();
    views taken from it must not be used after that. Registered memory stays ``source``'s (the
    buffer keeps a reference to it) and is mapped until :meth:`deregister` or destroy(). Every
    rank must pass outputs at the same offset of its buffer to a collective, as with NCCL's
    symmetric windows."""

    def __init__(self, comm, nbytes: int = 0, source=None):
        self._comm = comm
        self.device = comm.device
        self._source = source  # kept alive while mapped; dropped by deregister()
        self._registered = source is not None
        if source is None:
            self.nbytes = int(nbytes)
            self._ptr: int | None = comm._alloc_symmetric(self.nbytes)
        else:
            ptr, self.nbytes = _device_span(source)
            comm._register_symmetric(ptr, self.nbytes)
            self._ptr = ptr

    @property
    def registered(self) -> bool:
        """Whether the memory is a registered tensor's (else the buffer allocated it)."""
        return self._registered

    @property
    def ptr(self) -> int:
        if self._ptr is None:
            raise InvalidUsageError("SymmetricBuffer: the buffer was already released")
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
        """Collective: frees an allocated buffer on every rank (after this GPU's queued work)."""
        if self.registered:
            raise InvalidUsageError(
                "SymmetricBuffer.free: the memory is a registered tensor's; deregister() it"
            )
        self._release()

    def deregister(self) -> None:
        """Collective: unmaps a registered buffer on every rank (after this GPU's queued work);
        the memory stays the tensor's."""
        if not self.registered:
            raise InvalidUsageError(
                "SymmetricBuffer.deregister: the buffer was allocated, not registered; free() it"
            )
        self._release()
        self._source = None

    def _release(self) -> None:
        self._comm._free_symmetric(self.ptr)
        self._ptr = None

    def __repr__(self) -> str:
        kind = "registered" if self.registered else "allocated"
        state = "released" if self._ptr is None else f"0x{self._ptr:x}"
        return f"SymmetricBuffer({self.nbytes} bytes on cuda:{self.device}, {kind}, {state})"


def _device_span(obj) -> tuple[int, int]:
    """(pointer, bytes) of the memory a CUDA tensor or ``__cuda_array_interface__`` object
    spans: from its lowest element to its highest, whatever its strides."""
    if hasattr(obj, "data_ptr") and hasattr(obj, "element_size"):  # a torch tensor
        shape, strides, itemsize, ptr = obj.shape, obj.stride(), obj.element_size(), obj.data_ptr()
    else:
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is None:
            raise InvalidArgumentError(
                f"register_symmetric: tensor must be a CUDA tensor or have "
                f"__cuda_array_interface__, not {type(obj).__module__}.{type(obj).__name__}"
            )
        shape, ptr = tuple(cai["shape"]), cai["data"][0]
        itemsize = int(cai["typestr"][2:])
        strides = cai.get("strides")
        if strides is None:  # C-contiguous, in bytes
            strides = [itemsize * math.prod(shape[i + 1 :]) for i in range(len(shape))]
        strides = [s // itemsize for s in strides]
    if any(n == 0 for n in shape):
        return ptr, 0
    # Negative strides (allowed by the interface) put elements below the first one.
    low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(shape, strides) if s > 0)
    return ptr + low * itemsize, (high - low + 1) * itemsize
