"""torchcomms' object collectives (``torchcomms.objcol``) on RCCLX: those of
``torchcomms_rcclx.objcol``, each taking the communicator first."""

from torchcomms_rcclx.objcol import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)

__all__ = [
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "recv_object_list",
    "scatter_object_list",
    "send_object_list",
]
