"""Locates RCCLX's NCCL-ABI library (libnccl.so.2, also librccl.so.1) and loads it.

The library is plain C: this package finds it, runs programs on it (``rcclx-run [--] CMD``,
which preloads it so that it replaces NVIDIA's NCCL even where an RPATH points there), and
offers a small ctypes binding of a few functions, for tests and quick checks.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from rcclx_nccl._version import __version__ as __version__  # written by the build

__all__ = [
    "NCCL_UNIQUE_ID_BYTES",
    "NcclError",
    "environ",
    "get_unique_id",
    "get_version",
    "include_dir",
    "library_dir",
    "library_path",
    "load",
    "run_environment",
]

NCCL_UNIQUE_ID_BYTES = 128

_LIBRARIES = {"nccl": "libnccl.so.2", "rccl": "librccl.so.1"}


def _package_dir(child: str) -> Path:
    """The package's `child` directory: in site-packages, or beside the sources for an editable
    install (whose __path__ lists both)."""
    candidates = [Path(p) / child for p in __path__]
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return candidates[0]


def library_dir() -> Path:
    """The directory holding libnccl.so.2 and librccl.so.1."""
    return _package_dir("lib")


def library_path(name: str = "nccl") -> Path:
    """Path of the installed libnccl.so.2 (``name="rccl"``: librccl.so.1)."""
    if name not in _LIBRARIES:
        raise ValueError(f"library name {name!r} is not one of {sorted(_LIBRARIES)}")
    path = library_dir() / _LIBRARIES[name]
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; reinstall with: pip install ./nccl_compat")
    return path


def include_dir() -> Path:
    """The directory holding nccl.h and nccl_device.h (compile NCCL programs with ``-I`` this)."""
    return _package_dir("include")


def environ(base: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of ``base`` (default: os.environ) whose LD_LIBRARY_PATH finds this library first."""
    env = dict(os.environ if base is None else base)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = str(library_dir()) + (os.pathsep + old if old else "")
    return env


class NcclError(RuntimeError):
    """An nccl* call returned a result other than ncclSuccess."""

    def __init__(self, function: str, result: int, description: str, last_error: str):
        super().__init__(f"{function} returned {result} ({description}): {last_error}")
        self.result = result


@functools.cache
def load(name: str = "nccl") -> ctypes.CDLL:
    """The library loaded with ctypes, argument and result types declared."""
    lib = ctypes.CDLL(str(library_path(name)))
    for prefix in ("", "p"):
        getattr(lib, prefix + "ncclGetVersion").argtypes = [ctypes.POINTER(ctypes.c_int)]
        getattr(lib, prefix + "ncclGetVersion").restype = ctypes.c_int
        getattr(lib, prefix + "ncclGetUniqueId").argtypes = [ctypes.c_void_p]
        getattr(lib, prefix + "ncclGetUniqueId").restype = ctypes.c_int
        getattr(lib, prefix + "ncclGetErrorString").argtypes = [ctypes.c_int]
        getattr(lib, prefix + "ncclGetErrorString").restype = ctypes.c_char_p
        getattr(lib, prefix + "ncclGetLastError").argtypes = [ctypes.c_void_p]
        getattr(lib, prefix + "ncclGetLastError").restype = ctypes.c_char_p
    return lib


def run_environment(base: dict[str, str] | None = None, name: str = "nccl") -> dict[str, str]:
    """The environment ``rcclx-run`` runs a program in: our library in LD_PRELOAD (so it wins
    over an RPATH to NVIDIA's), first on LD_LIBRARY_PATH and in VLLM_NCCL_SO_PATH."""
    from rcclx_nccl._run import run_environment as make

    return make(base, name)


def _check(lib: ctypes.CDLL, function: str, result: int) -> None:
    if result != 0:
        description = lib.ncclGetErrorString(result).decode()
        raise NcclError(function, result, description, lib.ncclGetLastError(None).decode())


def get_version(name: str = "nccl") -> int:
    """ncclGetVersion: the NCCL_VERSION_CODE the library implements (23102: NCCL 2.31.2)."""
    lib = load(name)
    version = ctypes.c_int(0)
    _check(lib, "ncclGetVersion", lib.ncclGetVersion(ctypes.byref(version)))
    return version.value


def get_unique_id(name: str = "nccl") -> bytes:
    """ncclGetUniqueId: a new 128-byte unique id whose bootstrap root this process hosts."""
    lib = load(name)
    buf = ctypes.create_string_buffer(NCCL_UNIQUE_ID_BYTES)
    _check(lib, "ncclGetUniqueId", lib.ncclGetUniqueId(buf))
    return buf.raw
