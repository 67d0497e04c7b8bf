"""rcclx_core: communicators and collectives on host and GPU buffers.

Create a communicator on every rank (by unique id, the torchrun environment, or a store), then
call collectives on any contiguous array (numpy, torch, cupy: anything with DLPack or the
buffer protocol). Host buffers run synchronously unless ``async_op=True``, which returns a
``Work``; GPU buffers (a communicator created with ``device=``) are enqueued on ``stream=``.
Test and tool hooks live in :mod:`rcclx_core._testing`.
"""

from __future__ import annotations

from ctran import (
    Error,
    InvalidArgumentError,
    InvalidUsageError,
    RemoteError,
    SystemCallError,
    TimeoutError,
)
from rcclx_core import _testing  # noqa: F401  (rcclx_core._testing without an import)
from rcclx_core._C import (
    DataType,
    RedOp,
    Work,
    config_dump,
    create_unique_id,
    datatype_size,
    refresh_logging,
)
from rcclx_core._communicator import Communicator, GroupHandle
from rcclx_core._version import __version__ as __version__  # written by the build
from rcclx_core.symmetric import SymmetricBuffer

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
    "refresh_logging",
]
