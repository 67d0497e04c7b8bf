"""RCCLX for PyTorch: a torchcomms-style communicator over ``rcclx_core``.

``new_comm("rcclx", torch.device("cpu"), "my_comm")`` returns a :class:`TorchCommRCCLX` with
torchcomms' names (``get_rank``, ``all_reduce``, ``all_to_all_v_single``, ``split``...). The
only RCCLX package that imports torch; it checks tensors, takes the current stream and hands the
tensors to ``rcclx_core``. The names below load on first use, so importing this package touches
nothing of torch (torch itself may import it while it initialises).
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
    "TorchCommRCCLX": "torchcomms_rcclx._comm",
    "Work": "torchcomms_rcclx._work",
    "new_comm": "torchcomms_rcclx._create",
}

__all__ = sorted(_EXPORTS)
__version__ = "0.1.0"

# torch.distributed's "rcclx" backend registers here once torch.distributed is fully imported.
if "Backend" in vars(sys.modules.get("torch.distributed", sys)):
    importlib.import_module("torchcomms_rcclx.c10d")


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchcomms_rcclx' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(list(globals()) + __all__)
