"""CTran: how RCCLX ranks find each other and reach each other's memory.

Join a group (by unique id, the torchrun environment, or a store), then create windows: memory
every rank allocates collectively, which peers on the same host load and store directly and
peers elsewhere reach by ``put`` / ``signal``.
"""

from ctran._C import (
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
    process_token,
    refresh_logging,
    unique_id_secret,
)

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
    "refresh_logging",
    "unique_id_secret",
]
__version__ = "0.1.0"
