"""TorchCommRCCLX.split: a new communicator of some of this one's ranks, made collectively
over it; it keeps this communicator's device, options and hints."""

from __future__ import annotations

import rcclx_core
from torchcomms_rcclx import _setup


def split(comm, ranks, name: str, hints=None, timeout=None):
    """See TorchCommRCCLX.split."""
    what = "split"
    core = comm._usable(what)
    if hints:
        raise rcclx_core.InvalidArgumentError(
            "split: hints= is not supported (the new communicator keeps this one's)"
        )
    ranks = list(ranks)
    for i, r in enumerate(ranks):
        comm._check_peer(what, f"ranks[{i}]", r)
    if len(set(ranks)) != len(ranks):
        dup = sorted({r for r in ranks if ranks.count(r) > 1})
        raise rcclx_core.InvalidArgumentError(f"split: ranks {ranks} name {dup} twice")
    if ranks and comm._rank not in ranks:
        raise rcclx_core.InvalidArgumentError(
            f"split: ranks {ranks} leave out this rank ({comm._rank}); pass [] on ranks "
            "that join no new communicator"
        )
    if not isinstance(name, str) or not name:
        raise rcclx_core.InvalidArgumentError(
            f"split: name must be a non-empty string, got {name!r}"
        )
    color, key = (min(ranks), ranks.index(comm._rank)) if ranks else (-1, None)
    child = core.split(color, key)
    if child is None:
        return None
    if child.size != len(ranks) or child.rank != key:
        child.abort()
        raise rcclx_core.InvalidArgumentError(
            f"split: rank {comm._rank} passed ranks {ranks}, but {child.size} rank(s) "
            "joined it (every member must pass the same list)"
        )
    options = _setup.CommOptions(
        abort_process_on_timeout_or_error=comm._options.abort_process_on_timeout_or_error,
        timeout=comm._options.timeout,
        store=comm._options.store,
        hints=dict(comm._options.hints),
    )
    from torchcomms_rcclx._comm import TorchCommRCCLX  # the module that imports this one

    return TorchCommRCCLX(child, comm._device, name, options)
