"""The argument lists torchcomms programs use, against the real torchcomms' own: each collective
of torchcomms' TorchComm, ``new_comm``, ``objcol`` and ``device_mesh.init_device_mesh`` take the
same arguments, in the same order, on RCCLX's backend and stand-in as on the real torchcomms (so
a program written for one runs on the other), and the backend takes torchcomms' positional
argument lists, which its C++ side passes. The stand-in's TorchComm forwards the backend's
methods as they are (checked here without torchcomms too)."""

from __future__ import annotations

import inspect

import pytest
import tc_helpers as H
from signatures import python_signature, runtime_signature

torch = pytest.importorskip("torch")

import torchcomms  # noqa: E402

import torchcomms_rcclx  # noqa: E402
from torchcomms_rcclx import objcol as our_objcol  # noqa: E402
from torchcomms_rcclx._backend import TORCHCOMMS_CALLS, TorchCommRCCLX  # noqa: E402

needs_real = pytest.mark.skipif(
    not H.REAL_TORCHCOMMS,
    reason="compares with the real torchcomms (installed for the second pass of nox -s tests)",
)


def _names(params) -> list[str]:
    return [name for _, name, _ in params if name != "self"]


@needs_real
@pytest.mark.parametrize("name", TORCHCOMMS_CALLS)
def test_collectives_take_torchcomms_arguments(name):
    theirs = _names(runtime_signature(getattr(torchcomms.TorchComm, name), name)[0])
    ours = _names(python_signature(getattr(TorchCommRCCLX, name)))
    assert ours[: len(theirs)] == theirs
    extra = inspect.signature(getattr(TorchCommRCCLX, name)).parameters
    assert all(extra[n].default is not inspect.Parameter.empty for n in ours[len(theirs) :])


@needs_real
def test_new_comm_takes_torchcomms_arguments():
    theirs = _names(runtime_signature(torchcomms.new_comm, "new_comm")[0])
    standin = _standin_module()
    assert _names(python_signature(standin.new_comm)) == theirs


def _standin_module():
    """The stand-in module, loaded from the folder its distribution puts on sys.path under
    another name (the real torchcomms holds the name ``torchcomms``)."""
    import importlib.util
    import os
    import sys

    folders = [p for p in sys.path if os.path.basename(p) == "rcclx_torchcomms_standin"]
    if not folders:
        pytest.skip("rcclx-torchcomms-standin is not installed")
    spec = importlib.util.spec_from_file_location(
        "standin_torchcomms", os.path.join(folders[0], "torchcomms", "__init__.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_real
@pytest.mark.parametrize("name", our_objcol.__all__)
def test_objcol_takes_torchcomms_arguments(name):
    from torchcomms import objcol

    assert _names(python_signature(getattr(our_objcol, name))) == _names(
        python_signature(getattr(objcol, name))
    )


@needs_real
def test_init_device_mesh_takes_torchcomms_arguments():
    from torchcomms import device_mesh

    from torchcomms_rcclx.device_mesh import init_device_mesh

    assert _names(python_signature(init_device_mesh)) == _names(
        python_signature(device_mesh.init_device_mesh)
    )


@pytest.mark.parametrize("name", TORCHCOMMS_CALLS)
def test_torchcomm_forwards_the_backends_methods(name):
    forwarded = getattr(torchcomms_rcclx.TorchComm, name)
    assert inspect.signature(forwarded) == inspect.signature(getattr(TorchCommRCCLX, name))
    assert forwarded.__doc__ == getattr(TorchCommRCCLX, name).__doc__
