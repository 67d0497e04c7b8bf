"""RCCLX's stand-in for the ``torchcomms`` package, for machines where torchcomms is not
installed: torchcomms' quick start runs on RCCLX as written.

``torchcomms.new_comm("rcclx", device, name="my_comm")`` returns a ``TorchComm`` over the rcclx
backend (``torchcomms_rcclx.TorchCommRCCLX``, the class the real torchcomms registers too:
``comm.get_backend_impl()``); torchcomms' other names map to RCCLX's (``TorchWork`` is
``Work``, ...). ``"rcclx"`` is the only backend. ``STANDIN`` tells this module from the real one
(which has no such attribute).

It never takes a real torchcomms' place: its folder is appended to sys.path after
site-packages (the distribution's .pth file), so a torchcomms on the path is found before it;
and should one still be found by other means (a folder later on the path, an editable install's
import hook), importing this module imports that one instead.

torch (2.11 and newer) imports ``torchcomms`` while torch.distributed initialises, so importing
this module imports neither torch nor torchcomms_rcclx (the names load on first use). It has no
``_comms``, ``_backend_wrapper`` or ``hooks`` module: torch then behaves as without torchcomms.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib.machinery import PathFinder

STANDIN = "rcclx"
BACKENDS = ("rcclx",)

# torchcomms' name -> (module, name there); loaded on first access.
_EXPORTS = {
    "BatchSendRecv": ("torchcomms_rcclx", "BatchSendRecv"),
    "CommOptions": ("torchcomms_rcclx", "CommOptions"),
    "P2POp": ("torchcomms_rcclx", "P2POp"),
    "RedOpType": ("torchcomms_rcclx", "RedOpType"),
    "ReduceOp": ("torchcomms_rcclx", "ReduceOp"),
    "TorchComm": ("torchcomms_rcclx", "TorchComm"),
    "TorchCommWindow": ("torchcomms_rcclx._window", "TorchCommWindowRCCLX"),
    "TorchWork": ("torchcomms_rcclx", "Work"),
}
_SUBMODULES = ("device_mesh", "objcol")

__all__ = ["is_backend_built", "new_comm", *sorted(_EXPORTS)]


def is_backend_built(backend: str) -> bool:
    """Whether ``new_comm`` has `backend`, as torchcomms' function of that name."""
    return backend in BACKENDS


def new_comm(
    backend: str,
    device,
    name: str,
    abort_process_on_timeout_or_error: bool | None = None,
    timeout=None,
    is_high_priority_stream: bool | None = None,
    store=None,
    enable_reconfigure: bool = False,
    hints=None,
):
    """torchcomms' ``new_comm`` (its argument list) for the one backend here, ``"rcclx"``: a
    TorchComm over the backend ``torchcomms_rcclx.new_comm`` creates (rank and size from the
    launcher's environment; see there for the arguments). ``enable_reconfigure`` is refused:
    rcclx has no reconfigure."""
    import rcclx_core

    if backend not in BACKENDS:
        raise rcclx_core.InvalidArgumentError(
            f"torchcomms.new_comm: backend {backend!r} is not available: this torchcomms is "
            f"RCCLX's stand-in (package rcclx-torchcomms-standin), whose only backend is "
            f"'rcclx'; other backends need the real torchcomms installed"
        )
    if enable_reconfigure:
        raise rcclx_core.InvalidArgumentError(
            "torchcomms.new_comm: enable_reconfigure=True, but rcclx has no reconfigure"
        )
    import torchcomms_rcclx

    backend_comm = torchcomms_rcclx.new_comm(
        backend,
        device,
        name,
        abort_process_on_timeout_or_error=abort_process_on_timeout_or_error,
        timeout=timeout,
        is_high_priority_stream=is_high_priority_stream,
        store=store,
        hints=hints,
    )
    return torchcomms_rcclx.TorchComm(backend_comm)


def __getattr__(name: str):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'torchcomms' (RCCLX's stand-in) has no attribute {name!r}")
    module, attribute = target
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))


# The folder the distribution appends to sys.path (site-packages/rcclx_torchcomms_standin, or the
# source folder of an editable install): a torchcomms found in one is a stand-in, never "real".
_FOLDER_NAME = "rcclx_torchcomms_standin"


def _is_standin_folder(path: str) -> bool:
    return os.path.basename(os.path.realpath(path or os.curdir)) == _FOLDER_NAME


def _is_real(spec) -> bool:
    """Whether `spec` is a torchcomms that an import would load rather than this one: a regular
    package or module (a folder without __init__.py loses to this package anyway), not a copy
    of this stand-in (two copies handing the import to each other would never end)."""
    if spec is None or spec.loader is None or spec.origin is None:
        return False
    package_folder = os.path.dirname(os.path.dirname(spec.origin))
    return not _is_standin_folder(package_folder)


def _other_torchcomms():
    """The spec of a real torchcomms that the import system can find, else None: sys.path's
    folders other than the stand-in's, then the other finders of sys.meta_path (editable
    installs' hooks). Cheap: the path finder's caches are warm, and nothing is imported."""
    elsewhere = [p for p in sys.path if not _is_standin_folder(p)]
    for finder in sys.meta_path:
        try:
            if finder is PathFinder:
                spec = PathFinder.find_spec(__name__, elsewhere)
            else:
                spec = finder.find_spec(__name__, None)
        except RecursionError:  # an import handed back and forth, a bug: not "nothing found"
            raise
        except Exception:  # noqa: BLE001 - a finder that fails has found nothing
            continue
        if _is_real(spec):
            return spec
    return None


def _import_instead(spec) -> None:
    """Runs the real torchcomms as ``torchcomms``: the import statement running this module
    returns what sys.modules holds when it finishes, which is then that one (its errors are the
    import's errors, as if this module did not exist)."""
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    sys.modules[__name__] = module
    spec.loader.exec_module(module)


_real = _other_torchcomms()
if _real is not None:
    _import_instead(_real)
