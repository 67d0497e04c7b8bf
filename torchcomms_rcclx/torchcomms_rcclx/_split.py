"""TorchCommRCCLX.split: a new communicator of some of this one's ranks, made collectively over
it. It keeps this communicator's device, options and knobs; hints (knob names, see _hints) and
a timeout override them. From torchcomms both come in its CommOptions (whose timeout is
torchcomms' own default unless the caller gave one), from the other front ends as arguments
(no timeout: this communicator's)."""

from __future__ import annotations

import dataclasses
import datetime
import zlib

import torch

import rcclx_core
from torchcomms_rcclx import _setup
from torchcomms_rcclx._hints import comm_knobs


def split(comm, ranks, name: str, options, hints, timeout):
    """See TorchCommRCCLX.split."""
    what = "split"
    core = comm._usable(what)
    if not isinstance(name, str) or not name:
        raise rcclx_core.InvalidArgumentError(
            f"split: name must be a non-empty string, got {name!r}"
        )
    ranks = _member_ranks(comm, ranks)
    if options is not None:
        given = _setup.comm_options(options)
        hints = {**given.hints, **(hints or {})}
        timeout = given.timeout if timeout is None else timeout
    seconds = _setup.as_seconds(timeout, what)
    knobs = comm_knobs(hints, what)
    new_options = dataclasses.replace(comm._options, hints={**comm._options.hints, **knobs})
    if seconds is not None:
        new_options.timeout = datetime.timedelta(seconds=seconds)
        _setup.with_timeout(knobs, new_options.timeout)
    color, key = (min(ranks), ranks.index(comm._rank)) if ranks else (-1, None)
    child = core.split(color, key, knobs or None)
    if child is None:
        return None
    _check_same_list(child, ranks, key, comm._rank)
    return type(comm)()._attach(child, comm._device, name, new_options)


def _check_same_list(child, ranks: list[int], key: int, rank: int) -> None:
    """The core's split groups the ranks by color (the list's smallest rank) and orders them by
    key (the place in the list), so members that passed different lists with the same smallest
    rank land in one communicator. Its members compare their lists over it and, all seeing the
    same rows, destroy it together (collectively: none leaves while another still reads) and
    raise when any differs, naming the ranks whose list differs."""
    digest = zlib.crc32(",".join(map(str, ranks)).encode())
    mine = torch.tensor([digest, len(ranks), key, rank], dtype=torch.int64)
    rows = torch.zeros(4 * child.size, dtype=torch.int64)
    child.all_gather(mine, rows)
    rows = rows.reshape(child.size, 4).tolist()
    others = [r[3] for r in rows if r[0] != digest or r[1] != len(ranks)]
    in_order = all(rows[i][2] == i for i in range(child.size))
    if not others and in_order and child.size == len(ranks):
        return
    child.destroy()
    joined = sorted(r[3] for r in rows)
    detail = f"ranks {others} passed other lists" if others else f"ranks {joined} joined it"
    raise rcclx_core.InvalidArgumentError(
        f"split: rank {rank} passed ranks {ranks}, but {detail} (every member must pass the "
        "same list)"
    )


def _member_ranks(comm, ranks) -> list[int]:
    """`ranks` checked: ranks of `comm`, none twice, this rank among them unless empty."""
    try:
        ranks = list(ranks)
    except TypeError:
        raise TypeError(f"split: ranks must be a sequence of ranks, got {ranks!r}") from None
    for i, r in enumerate(ranks):
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < comm._size:
            raise rcclx_core.InvalidArgumentError(
                f"split: ranks[{i}] {r!r} is not a rank of the communicator '{comm._name}' "
                f"({comm._size} ranks)"
            )
    if len(set(ranks)) != len(ranks):
        dup = sorted({r for r in ranks if ranks.count(r) > 1})
        raise rcclx_core.InvalidArgumentError(f"split: ranks {ranks} name {dup} twice")
    if ranks and comm._rank not in ranks:
        raise rcclx_core.InvalidArgumentError(
            f"split: ranks {ranks} leave out this rank ({comm._rank}); pass [] on ranks "
            "that join no new communicator"
        )
    return ranks
