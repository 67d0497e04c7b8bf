"""How a call's tensors reach rcclx_core, and how the core's errors reach the caller: the core
checks every argument once (placement, contiguity, types, counts, roots) and names its own
arguments (``sendbuf``, ``recvbuf``); the torch layer passes the tensors as they are and renames
the arguments in the errors to the caller's."""

from __future__ import annotations

import re


def plain(what: str, name: str, t):
    """`t` as the core takes it: detached when it requires grad (a collective moves data;
    autograd does not see it, as with NCCL)."""
    try:
        return t.detach() if t.requires_grad else t
    except AttributeError:
        raise TypeError(f"{what}: {name} must be a torch.Tensor, got {type(t).__name__}") from None


def renamed(error: Exception, what: str, names) -> Exception:
    """The core's `error` (an InvalidArgumentError or a TypeError) as the call `what` reports
    it: the core's argument names replaced by the caller's (`names`), the core's call name by
    `what`."""
    text = str(error)
    _, sep, detail = text.partition(": ")
    if not sep:
        return error
    for core_name, name in (names or {}).items():
        detail = re.sub(rf"\b{core_name}\b", name, detail)
    return type(error)(f"{what}: {detail}")
