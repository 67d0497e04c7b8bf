"""torchcomms' object collectives (``torchcomms.objcol``) on RCCLX: those of
``torchcomms_rcclx.objcol``, each taking the communicator first (torchcomms' argument lists)."""

from torchcomms_rcclx import objcol as _rcclx
from torchcomms_rcclx.objcol import *  # noqa: F403 - the names of __all__ below

__all__ = list(_rcclx.__all__)
