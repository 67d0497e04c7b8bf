"""rcclx_core: communicators and collectives on host memory.

Create a communicator on every rank (by unique id, the torchrun environment, or a store), then
call collectives on any contiguous array (numpy, torch CPU tensors, anything with DLPack or the
buffer protocol). Calls run synchronously unless ``async_op=True``, which returns a ``Work``.
"""

from __future__ import annotations

import contextlib

from ctran import (
    Error,
    InvalidArgumentError,
    InvalidUsageError,
    RemoteError,
    SystemCallError,
    TimeoutError,
)
from rcclx_core._C import (
    Communicator,
    DataType,
    RedOp,
    Work,
    config_dump,
    create_unique_id,
    datatype_size,
    low_precision_decision,
    lp_dequantize,
    lp_gpu_launch_shape,
    lp_quantize,
    lp_wire_bytes,
    refresh_logging,
    select_all_reduce,
)
from rcclx_core.symmetric import SymmetricBuffer, alloc_symmetric, register_symmetric


class GroupHandle:
    """What ``with comm.group(async_op=True) as g:`` binds: after the block, ``g.work`` is the
    group's Work (None for a synchronous group or one nested in another)."""

    work: Work | None = None


@contextlib.contextmanager
def _group(self: Communicator, async_op: bool = False):
    """Records the calls made inside the ``with`` block and runs them together on exit."""
    handle = GroupHandle()
    self.group_start()
    try:
        yield handle
    except BaseException:
        self.group_end()
        raise
    handle.work = self.group_end(async_op=async_op)


Communicator.group = _group
Communicator.alloc_symmetric = alloc_symmetric
Communicator.register_symmetric = register_symmetric

__all__ = [
    "Communicator",
    "DataType",
    "Error",
    "GroupHandle",
    "InvalidArgumentError",
    "InvalidUsageError",
    "RedOp",
    "RemoteError",
    "SymmetricBuffer",
    "SystemCallError",
    "TimeoutError",
    "Work",
    "config_dump",
    "create_unique_id",
    "datatype_size",
    "low_precision_decision",
    "lp_dequantize",
    "lp_gpu_launch_shape",
    "lp_quantize",
    "lp_wire_bytes",
    "refresh_logging",
    "select_all_reduce",
]
__version__ = "0.1.0"
