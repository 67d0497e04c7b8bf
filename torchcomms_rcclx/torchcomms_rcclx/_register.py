"""``"rcclx"`` in the real torchcomms (and in PyTorch's ``torch.comms``, which continues it): the
backend class made a subclass of that package's ``TorchCommBackend``, a pybind11 trampoline
whose C++ side calls the Python methods, then registered by name. torchcomms' ``new_comm``
finds it through this distribution's entry points (groups ``torchcomms.backends`` and
``torch.comms.backends``), whose modules (_plugin_torchcomms, _plugin_torch_comms) call
:func:`register` when torchcomms loads them; importing them registers it by hand too.
"""

from __future__ import annotations

from torchcomms_rcclx._backend import TorchCommRCCLX

BACKEND_NAME = "rcclx"


def backend_class(package):
    """TorchCommRCCLX as a backend of `package` (``torchcomms`` or ``torch.comms``)."""
    base = package.TorchCommBackend

    class RegisteredTorchCommRCCLX(TorchCommRCCLX, base):
        __doc__ = TorchCommRCCLX.__doc__
        _completes_in_call = True  # see TorchCommRCCLX._completes_in_call

        def __init__(self):
            base.__init__(self)  # the C++ half, which torchcomms holds
            TorchCommRCCLX.__init__(self)

    RegisteredTorchCommRCCLX.__qualname__ = f"TorchCommRCCLX[{package.__name__}]"
    return RegisteredTorchCommRCCLX


def register(package) -> None:
    """Registers ``"rcclx"`` with `package` (``torchcomms`` or ``torch.comms``); registering
    again replaces the class, which communicators made before keep."""
    package.register_backend(BACKEND_NAME, backend_class(package))
