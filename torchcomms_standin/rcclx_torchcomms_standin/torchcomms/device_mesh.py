"""torchcomms' ``device_mesh`` helpers (``init_device_mesh``) on RCCLX: the names of
``torchcomms_rcclx.device_mesh``, which loads (with torch) on first use."""

from __future__ import annotations

import importlib

_SOURCE = "torchcomms_rcclx.device_mesh"


def _source():
    return importlib.import_module(_SOURCE)


def __getattr__(name: str):
    # Dunder probes (pickle, inspect, doctest) answer here without importing torch; __all__
    # is the source's.
    if name.startswith("__") and name != "__all__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        return getattr(_source(), name)
    except AttributeError:
        raise AttributeError(
            f"module {__name__!r} (RCCLX's stand-in, from {_SOURCE}) has no attribute {name!r}"
        ) from None


def __dir__():
    return sorted(set(globals()) | set(getattr(_source(), "__all__", ())))
