"""TorchComm: torchcomms' communicator over an rcclx backend, for machines where torchcomms is not
installed. The stand-in ``torchcomms`` module exports it as ``torchcomms.TorchComm``; the real
torchcomms has its own, over the same backend class. Every method forwards to the backend
(:class:`~torchcomms_rcclx.TorchCommRCCLX`), so there is one implementation: the collectives
are generated from the backend's methods (their signatures and documentation are the backend's),
a call the backend completed returns a completed Work, as torchcomms' calls always return one.
"""

from __future__ import annotations

import functools

from torchcomms_rcclx._backend import TORCHCOMMS_CALLS, TorchCommRCCLX
from torchcomms_rcclx._work import DONE

# What TorchComm forwards as it is (the calls besides the collectives).
_FORWARDED = (
    "finalize",
    "abort",
    "is_abort_supported",
    "is_aborted",
    "set_timeout",
    "get_rank",
    "get_size",
    "get_name",
    "get_device",
    "get_options",
    "get_backend",
    "get_backend_version",
    "batch_op_create",
    "new_window",
    "tensor_register",
    "tensor_deregister",
)


class TorchComm:
    """torchcomms' communicator: ``new_comm("rcclx", device, name=...)`` of the stand-in
    ``torchcomms`` returns one. What torchcomms' interface does not have (alltoallv_dynamic,
    symmetric buffers, the core communicator) is the backend's: ``get_backend_impl()``."""

    __slots__ = ("_backend",)

    def __init__(self, backend: TorchCommRCCLX):
        self._backend = backend

    def get_backend_impl(self) -> TorchCommRCCLX:
        """The rcclx backend underneath (torchcomms' name)."""
        return self._backend

    unsafe_get_backend = get_backend_impl

    def split(self, ranks, name: str, hints=None, timeout=None) -> TorchComm | None:
        """Collective: see :meth:`TorchCommRCCLX.split`; None on ranks that pass ``[]``."""
        child = self._backend.split(ranks, name, hints=hints, timeout=timeout)
        return None if child is None else TorchComm(child)

    def __repr__(self) -> str:
        return f"TorchComm({self._backend!r})"


def _collective(name: str):
    method = getattr(TorchCommRCCLX, name)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        work = getattr(self._backend, name)(*args, **kwargs)
        return DONE if work is None else work

    return call


def _forwarded(name: str):
    method = getattr(TorchCommRCCLX, name)

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        return getattr(self._backend, name)(*args, **kwargs)

    return call


for _name in TORCHCOMMS_CALLS:
    setattr(TorchComm, _name, _collective(_name))
for _name in _FORWARDED:
    setattr(TorchComm, _name, _forwarded(_name))
del _name
