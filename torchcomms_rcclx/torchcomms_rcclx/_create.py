"""new_comm: a communicator of every rank of the job, as torchcomms' new_comm (the rank, the
store, the device and the hints worked out by _setup; the communicator is _comm's)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping

import rcclx_core
from torchcomms_rcclx import _setup
from torchcomms_rcclx._comm import TorchCommRCCLX


def new_comm(
    backend: str,
    device,
    name: str,
    *,
    abort_process_on_timeout_or_error: bool | None = None,
    timeout=None,
    high_priority_stream: bool | None = None,
    store=None,
    hints: Mapping[str, str] | None = None,
) -> TorchCommRCCLX:
    """A communicator of every rank of the job, as torchcomms' ``new_comm``.

    The rank and the world size come from TORCHCOMM_RANK/TORCHCOMM_SIZE, else
    OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, RANK/WORLD_SIZE. The ranks meet in ``store``
    (a torch.distributed Store, or anything with set/get), else in a TCPStore at
    MASTER_ADDR:MASTER_PORT. ``device``: ``cpu`` (host tensors) or ``cuda``/``hip`` (without
    an index: GPU rank % count). ``timeout`` (timedelta or seconds) bounds every wait for a
    peer (RCCLX_TIMEOUT_MS); ``hints`` are knob values for this communicator
    (``{"RCCLX_ALLREDUCE_ALGO": "ring"}``; lower-case names are upper-cased).
    ``abort_process_on_timeout_or_error`` (default True, as torchcomms): a timeout or a
    peer's failure aborts the process instead of raising.
    """
    if backend != "rcclx":
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: backend {backend!r} is not this package's (only 'rcclx')"
        )
    if not isinstance(name, str) or not name:
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: name must be a non-empty string, got {name!r}"
        )
    rank, size = _setup.rank_and_size()
    dev = _setup.resolve_device(device, rank)
    knobs = _setup.normalize_hints(hints)
    seconds = _setup.as_seconds(timeout, "new_comm")
    if seconds is not None:
        knobs.setdefault("RCCLX_TIMEOUT_MS", str(max(1, round(seconds * 1000))))
    timeout_ms = int(knobs.get("RCCLX_TIMEOUT_MS", _default_timeout_ms()))
    if store is None:
        store = _setup.env_store(rank, size, timeout_ms / 1000)
    core = rcclx_core.Communicator.from_store(
        store,
        rank,
        size,
        prefix=_setup.store_prefix(store, name),
        device=dev.index if dev.type == "cuda" else None,
        hints=knobs or None,
    )
    options = _setup.CommOptions(
        abort_process_on_timeout_or_error=(
            True
            if abort_process_on_timeout_or_error is None
            else bool(abort_process_on_timeout_or_error)
        ),
        timeout=datetime.timedelta(milliseconds=timeout_ms),
        high_priority_stream=bool(high_priority_stream),
        store=store,
        hints=dict(hints or {}),
    )
    return TorchCommRCCLX(core, dev, name, options)


def _default_timeout_ms() -> int:
    for knob in rcclx_core.config_dump():
        if knob["name"] == "RCCLX_TIMEOUT_MS":
            return int(knob["value"])
    return 300000
