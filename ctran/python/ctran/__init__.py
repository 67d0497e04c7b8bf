"""CTran: how RCCLX ranks find each other and reach each other's memory.

Join a group (by unique id, the torchrun environment, or a store), then create windows: memory
every rank allocates collectively, which peers on the same host load and store directly and
peers elsewhere reach by ``put`` / ``signal``.
"""

import importlib.util as _importlib_util
import os as _os


def _libucx_lib_dir() -> str:
    """The lib/ folder of the libucx package (PyPI libucx-cu12 / libucx-cu13), or "".

    Found without importing the package, so UCX is loaded only by a group that uses it; the ucx
    transport reads the folder from RCCLX_UCX_WHEEL_DIR (see ctran/src/transport/ucx).
    """
    try:
        spec = _importlib_util.find_spec("libucx")
    except (ImportError, ValueError):
        return ""
    if spec is None or not spec.origin:
        return ""
    lib = _os.path.join(_os.path.dirname(spec.origin), "lib")
    return lib if _os.path.isfile(_os.path.join(lib, "libucp.so.0")) else ""


if not _os.environ.get("RCCLX_UCX_WHEEL_DIR") and _libucx_lib_dir():
    _os.environ["RCCLX_UCX_WHEEL_DIR"] = _libucx_lib_dir()

from ctran._C import (  # noqa: E402 (the environment above is set before the library loads)
    Bootstrap,
    CudaError,
    DeviceRma,
    Error,
    FileStore,
    InvalidArgumentError,
    InvalidUsageError,
    MemoryStore,
    PeerGroup,
    PythonStore,
    RemoteError,
    Store,
    SystemCallError,
    TcpStore,
    TcpStoreServer,
    TimeoutError,
    Topology,
    Window,
    built_with_cuda,
    config_dump,
    create_unique_id,
    cuda_device_count,
    cuda_probe,
    describe_unique_id,
    host_identity,
    log_info,
    process_token,
    refresh_logging,
    ucx_library,
    unique_id_secret,
)
from ctran._version import __version__ as __version__  # noqa: E402 (written by the build)

__all__ = [
    "Bootstrap",
    "CudaError",
    "DeviceRma",
    "Error",
    "FileStore",
    "InvalidArgumentError",
    "InvalidUsageError",
    "MemoryStore",
    "PeerGroup",
    "PythonStore",
    "RemoteError",
    "Store",
    "SystemCallError",
    "TcpStore",
    "TcpStoreServer",
    "TimeoutError",
    "Topology",
    "Window",
    "built_with_cuda",
    "config_dump",
    "create_unique_id",
    "cuda_device_count",
    "cuda_probe",
    "describe_unique_id",
    "host_identity",
    "process_token",
    "log_info",
    "refresh_logging",
    "ucx_library",
    "unique_id_secret",
]
