"""RCCLX for PyTorch: the ``"rcclx"`` backend of torchcomms and of torch.distributed.

One class, :class:`TorchCommRCCLX`, implements the backend; every way in reaches it:

- with torchcomms installed: ``torchcomms.new_comm("rcclx", device, name=...)`` (registered
  through this distribution's entry points; ``comm.get_backend_impl()`` is the backend);
- without it: ``torchcomms_rcclx.new_comm("rcclx", device, "my_comm")`` returns the backend
  itself, and the stand-in ``torchcomms`` module wraps it in :class:`TorchComm`;
- ``torch.distributed.init_process_group("rcclx")`` (the process group in ``c10d``, or through
  torchcomms when torch routes process groups there).

The only RCCLX package that imports torch. The names below load on first use, so importing this
package touches nothing of torch (torch itself may import it while it initialises).
"""

from __future__ import annotations

import importlib
import sys

_EXPORTS = {
    "BatchSendRecv": "torchcomms_rcclx._batch",
    "CommOptions": "torchcomms_rcclx._setup",
    "P2POp": "torchcomms_rcclx._batch",
    "P2POpType": "torchcomms_rcclx._batch",
    "RedOpType": "torchcomms_rcclx._ops",
    "ReduceOp": "torchcomms_rcclx._ops",
    "TorchComm": "torchcomms_rcclx._comm",
    "TorchCommRCCLX": "torchcomms_rcclx._backend",
    "Work": "torchcomms_rcclx._work",
    "new_comm": "torchcomms_rcclx._create",
}

__all__ = sorted(_EXPORTS)

# torch.distributed's "rcclx" backend registers here once torch.distributed is fully imported.
if "Backend" in vars(sys.modules.get("torch.distributed", sys)):
    importlib.import_module("torchcomms_rcclx.c10d")


def __getattr__(name: str):
    if name == "__version__":  # one release number for every RCCLX package: rcclx-core's
        from rcclx_core import __version__

        return __version__
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchcomms_rcclx' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
