"""new_comm: a communicator of every rank of the job, as torchcomms' ``new_comm``, without
torchcomms: the rcclx backend itself (what ``comm.get_backend_impl()`` returns under torchcomms).
"""

from __future__ import annotations

from collections.abc import Mapping

import rcclx_core
from torchcomms_rcclx import _setup
from torchcomms_rcclx._backend import TorchCommRCCLX


def new_comm(
    backend: str,
    device,
    name: str,
    *,
    abort_process_on_timeout_or_error: bool | None = None,
    timeout=None,
    is_high_priority_stream: bool | None = None,
    store=None,
    hints: Mapping[str, str] | None = None,
) -> TorchCommRCCLX:
    """A communicator of every rank of the job, as torchcomms' ``new_comm``.

    The rank and the world size come from TORCHCOMM_RANK/TORCHCOMM_SIZE, else
    OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, RANK/WORLD_SIZE, SLURM_PROCID/NTASKS. The
    ranks meet in ``store`` (a torch.distributed Store, or anything with set/get), else in a
    TCPStore at MASTER_ADDR:MASTER_PORT. ``device``: ``cpu`` (host tensors) or ``cuda``/``hip``
    (without an index: GPU rank % count; host tensors work too). ``timeout`` (timedelta or
    seconds) bounds every wait for a peer (RCCLX_TIMEOUT_MS, unless the environment sets it);
    ``hints`` are knob values for this communicator (``{"RCCLX_ALLREDUCE_ALGO": "ring"}``;
    lower case is upper-cased; names rcclx does not know are ignored).
    ``abort_process_on_timeout_or_error`` (default True, as torchcomms): a timeout or a
    peer's failure aborts the process instead of raising. ``is_high_priority_stream`` is
    recorded (``get_options().high_priority_stream``), not used.
    """
    if backend != "rcclx":
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: backend {backend!r} is not this package's (only 'rcclx')"
        )
    options = _setup.CommOptions(
        abort_process_on_timeout_or_error=(
            True if abort_process_on_timeout_or_error is None else abort_process_on_timeout_or_error
        ),
        timeout=timeout,
        high_priority_stream=is_high_priority_stream,
        store=store,
        hints=hints,
    )
    comm = TorchCommRCCLX()
    comm.init(device, name, options)
    return comm
