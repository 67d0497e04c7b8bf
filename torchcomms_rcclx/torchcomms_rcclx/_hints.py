"""torchcomms hints as rcclx reads them. torchcomms' contract is that hints are backend-specific:
a backend applies the names it knows and ignores the others, so a program tuned for another
backend (or torch.distributed's own ``persistent_store``) runs unchanged. An ignored name is
logged once per process at INFO (``RCCLX_DEBUG=INFO``).

On a communicator (``new_comm(hints=...)``, ``split``), the names rcclx knows are its knobs
(``config_dump()``; lower case is upper-cased): ``{"rcclx_allreduce_algo": "ring"}``. Per call
they are ``algo`` (all_reduce; also spelt ``RCCLX_ALLREDUCE_ALGO``) and ``low_precision``
(all_reduce, all_gather(_single, _v), reduce_scatter(_single, _v), all_to_all(_single); also
spelt ``RCCL_LOW_PRECISION_ENABLE``), "1" or "0". A known name with a bad value raises.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import ctran
import rcclx_core

_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
# Calls whose wire format may be FP8 (what the per-call low_precision hint chooses).
LP_CALLS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})
_ALGO_NAMES = frozenset({"algo", "rcclx_allreduce_algo"})
_LP_NAMES = frozenset({"low_precision", "rccl_low_precision_enable"})
_logged: set = set()  # (where, name) pairs already logged as ignored


@functools.cache
def _knob_names() -> frozenset:
    """Every knob of the registry (ctran's and rcclx_core's)."""
    return frozenset(k["name"] for k in (*ctran.config_dump(), *rcclx_core.config_dump()))


def _ignored(where: str, name) -> None:
    if (where, name) not in _logged:
        _logged.add((where, name))
        ctran.log_info(f"torchcomms_rcclx: {where}: hint {name!r} is not one rcclx reads; ignored")


def _as_mapping(what: str, hints) -> Mapping:
    if not isinstance(hints, Mapping):
        raise TypeError(
            f"{what}: hints must be a mapping of names to strings, got {type(hints).__name__}"
        )
    return hints


def _as_text(what: str, key, value) -> str:
    if not isinstance(value, str):
        raise TypeError(
            f"{what}: hints[{key!r}] must be a string, got {type(value).__name__} {value!r}"
        )
    return value


def comm_knobs(hints: Mapping[str, str] | None, what: str) -> dict[str, str]:
    """The knob values among a communicator's `hints` (names upper-cased); the rest ignored."""
    knobs: dict[str, str] = {}
    for key, value in _as_mapping(what, hints or {}).items():
        name = key.upper() if isinstance(key, str) else key
        if name in _knob_names():
            knobs[name] = _as_text(what, key, value)
        else:
            _ignored(what, key)
    return knobs


def call_options(what: str, hints: Mapping[str, str]) -> tuple[str | None, bool | None]:
    """A call's hints as (algo, low_precision), each None when not given; `what` is the core
    call the hints are for (``all_gather`` for all_gather_single, ...)."""
    algo = low_precision = None
    for key, value in _as_mapping(what, hints).items():
        name = key.lower() if isinstance(key, str) else key
        if name in _ALGO_NAMES and what == "all_reduce":
            algo = _as_text(what, key, value)
        elif name in _LP_NAMES and what in LP_CALLS:
            text = _as_text(what, key, value).lower()
            if text not in _TRUE and text not in _FALSE:
                raise rcclx_core.InvalidArgumentError(
                    f"{what}: hints[{key!r}]={value!r} must be 1 or 0"
                )
            low_precision = text in _TRUE
        else:
            _ignored(what, key)
    return algo, low_precision
