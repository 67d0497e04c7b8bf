"""What new_comm works out before it creates a communicator: this process's rank and the world
size (from the launcher's environment), the device (``cuda`` without an index becomes
``cuda:rank % count``; ``hip`` is ``cuda``), the store to meet in, and the hints."""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping
from typing import Any

import rcclx_core

# Where the rank and the size come from, first match first: torchcomms' own variables, then
# Open MPI's and MPICH's (PMI), then torchrun's, then Slurm's (after torchrun's: torchrun
# inside an allocation sets RANK for each of its workers, SLURM_PROCID being the agent's).
RANK_SIZE_VARIABLES = (
    ("TORCHCOMM_RANK", "TORCHCOMM_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMI_RANK", "PMI_SIZE"),
    ("RANK", "WORLD_SIZE"),
    ("SLURM_PROCID", "SLURM_NTASKS"),
)


@dataclasses.dataclass
class CommOptions:
    """What a communicator was created with (``get_options()``): torchcomms' CommOptions, plus
    ``high_priority_stream``. ``timeout=None`` is the RCCLX_TIMEOUT_MS knob's value."""

    abort_process_on_timeout_or_error: bool = True
    timeout: datetime.timedelta | None = None
    high_priority_stream: bool = False
    store: Any = None
    hints: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        seconds = as_seconds(self.timeout, "new_comm")
        self.timeout = datetime.timedelta(
            seconds=default_timeout_seconds() if seconds is None else seconds
        )
        self.abort_process_on_timeout_or_error = bool(self.abort_process_on_timeout_or_error)
        self.high_priority_stream = bool(self.high_priority_stream)
        self.hints = dict(self.hints or {})


def comm_options(options) -> CommOptions:
    """`options` (ours, torchcomms' CommOptions, or None) as ours."""
    if isinstance(options, CommOptions):
        return options
    if options is None:
        return CommOptions()
    abort = getattr(options, "abort_process_on_timeout_or_error", None)
    return CommOptions(
        abort_process_on_timeout_or_error=True if abort is None else abort,
        timeout=getattr(options, "timeout", None),
        store=getattr(options, "store", None),
        hints=dict(getattr(options, "hints", None) or {}),
    )


def default_timeout_seconds() -> float:
    """The RCCLX_TIMEOUT_MS knob's value (from the environment, else its default), in seconds."""
    for knob in rcclx_core.config_dump():
        if knob["name"] == "RCCLX_TIMEOUT_MS":
            return int(knob["value"]) / 1000
    raise LookupError("RCCLX_TIMEOUT_MS is not in rcclx_core's knob registry")


def with_timeout(knobs: dict, timeout: datetime.timedelta | None) -> dict:
    """`knobs` with `timeout` as the communicator's RCCLX_TIMEOUT_MS (the deadline of every wait
    for a peer), unless the hints or the environment set that knob: those win, so a job's
    RCCLX_TIMEOUT_MS holds for communicators that torchcomms or torch.distributed create with
    their own default timeouts."""
    if timeout is not None and "RCCLX_TIMEOUT_MS" not in os.environ:
        knobs.setdefault("RCCLX_TIMEOUT_MS", str(max(1, round(timeout.total_seconds() * 1000))))
    return knobs


def rank_and_size(env: Mapping[str, str] | None = None) -> tuple[int, int]:
    """This process's rank and the world size, from the first pair of variables set."""
    env = os.environ if env is None else env
    for rank_var, size_var in RANK_SIZE_VARIABLES:
        if rank_var not in env and size_var not in env:
            continue
        if rank_var not in env or size_var not in env:
            have, missing = (rank_var, size_var) if rank_var in env else (size_var, rank_var)
            raise rcclx_core.InvalidArgumentError(
                f"new_comm: {have} is set but {missing} is not (set both, or neither)"
            )
        try:
            rank, size = int(env[rank_var]), int(env[size_var])
        except ValueError:
            raise rcclx_core.InvalidArgumentError(
                f"new_comm: {rank_var}={env[rank_var]!r} and {size_var}={env[size_var]!r} "
                "must be integers"
            ) from None
        if size < 1 or not 0 <= rank < size:
            raise rcclx_core.InvalidArgumentError(
                f"new_comm: {rank_var}={rank} is not a rank of {size_var}={size} ranks"
            )
        return rank, size
    names = ", ".join(f"{r}/{s}" for r, s in RANK_SIZE_VARIABLES)
    raise rcclx_core.InvalidArgumentError(
        f"new_comm: no rank and world size in the environment (looked for {names})"
    )


def resolve_device(device, rank: int):
    """``device`` (a torch.device or its string) as the torch.device collectives run on."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise rcclx_core.InvalidArgumentError(f"new_comm: device {device!r}: {e}") from None
    if dev.type == "cpu":
        return torch.device("cpu")
    if dev.type not in ("cuda", "hip"):
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: device {str(dev)!r} is not supported (cpu, cuda or hip)"
        )
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: device {str(dev)!r} asked for, but this process sees no GPU"
        )
    index = rank % count if dev.index is None else dev.index
    if not 0 <= index < count:
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: device {str(dev)!r}: this process sees {count} GPU(s)"
        )
    return torch.device("cuda", index)


def as_seconds(timeout, what: str) -> float | None:
    """A timeout (timedelta or seconds) in seconds; None stays None."""
    if timeout is None:
        return None
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: timeout must be a positive timedelta or number of seconds, got {timeout!r}"
        )
    return float(seconds)


_STORES: dict = {}  # (addr, port) -> the TCPStore new_comm made for it (one per process)


def env_store(rank: int, size: int, timeout_s: float):
    """torch's TCPStore at MASTER_ADDR:MASTER_PORT: hosted by rank 0, unless the launcher's
    agent hosts it (torchrun: TORCHELASTIC_USE_AGENT_STORE=True); one per process."""
    addr, port = os.environ.get("MASTER_ADDR"), os.environ.get("MASTER_PORT")
    if not addr or not port:
        raise rcclx_core.InvalidArgumentError(
            "new_comm: no store= given and MASTER_ADDR / MASTER_PORT are not set"
        )
    try:
        port_number = int(port)
    except ValueError:
        raise rcclx_core.InvalidArgumentError(
            f"new_comm: MASTER_PORT={port!r} is not a port number"
        ) from None
    key = (addr, port_number)
    store = _STORES.get(key)
    if store is None:
        from torch.distributed import TCPStore

        agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
        store = TCPStore(
            addr,
            port_number,
            size,
            is_master=(rank == 0 and not agent),
            timeout=datetime.timedelta(seconds=timeout_s),
            wait_for_workers=False,
        )
        _STORES[key] = store
    return store


_PREFIXES: dict = {}  # (id(store), name) -> communicators of that name made in that store


def store_prefix(store, name: str) -> str:
    """A key prefix for a new communicator named `name`: the n-th of that name in one store
    gets its own keys (every rank creates them in the same order)."""
    key = (id(store), name)
    n = _PREFIXES.get(key, 0)
    _PREFIXES[key] = n + 1
    return f"torchcomms_rcclx/{name}/{n}"
