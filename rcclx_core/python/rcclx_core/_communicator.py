"""The Python Communicator: the native one (``rcclx_core._C.Communicator``) with what is
easier to say in Python: ``with comm.group():`` and symmetric buffers as objects."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

from rcclx_core import _C
from rcclx_core.symmetric import SymmetricBuffer


class GroupHandle:
    """What ``with comm.group(async_op=True) as g:`` binds: after the block, ``g.work`` is the
    group's Work (None for a synchronous group or one nested in another)."""

    work: _C.Work | None = None


def _adopt(cls, native: _C.Communicator | None):
    """`native` (a factory's or split()'s result) as an instance of `cls`, or None."""
    return None if native is None else cls(native)


class Communicator(_C.Communicator):
    """A rank's membership in a group that runs collectives together.

    Create one on every rank with :meth:`from_unique_id`, :meth:`from_env` or
    :meth:`from_store`; pass ``device=`` (a GPU index) to run collectives on that GPU's
    buffers too, and ``hints=`` (knob name -> value) to configure this communicator alone.
    """

    @classmethod
    def from_unique_id(
        cls,
        unique_id: bytes,
        rank: int,
        nranks: int,
        device: int | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> Communicator:
        """Joins the group named by ``unique_id`` (from :func:`create_unique_id`)."""
        hint_map = None if hints is None else dict(hints)
        return cls(_C.Communicator.from_unique_id(unique_id, rank, nranks, device, hint_map))

    @classmethod
    def from_env(
        cls, device: int | None = None, hints: Mapping[str, str] | None = None
    ) -> Communicator:
        """Joins the group torchrun's environment describes (RANK, WORLD_SIZE, MASTER_*)."""
        hint_map = None if hints is None else dict(hints)
        return cls(_C.Communicator.from_env(device, hint_map))

    @classmethod
    def from_store(
        cls,
        store,
        rank: int,
        nranks: int,
        prefix: str = "rcclx",
        device: int | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> Communicator:
        """Joins the group rendezvousing in ``store`` (a ctran store or a torch store)."""
        hint_map = None if hints is None else dict(hints)
        return cls(_C.Communicator.from_store(store, rank, nranks, prefix, device, hint_map))

    def split(self, color: int, key: int | None = None) -> Communicator | None:
        """Collective: ranks passing the same ``color`` form a new communicator ordered by
        ``(key, rank)``, with this one's device and hints; None for a negative color."""
        return _adopt(type(self), super().split(color, key))

    def split_ranks(self, ranks: list[int]) -> Communicator | None:
        """Collective: the listed ranks form a new communicator; None on the others."""
        return _adopt(type(self), super().split_ranks(ranks))

    @contextlib.contextmanager
    def group(self, async_op: bool = False) -> Iterator[GroupHandle]:
        """Records the calls made inside the ``with`` block and runs them together on exit."""
        handle = GroupHandle()
        self.group_start()
        try:
            yield handle
        except BaseException:
            self.group_end()
            raise
        handle.work = self.group_end(async_op=async_op)

    def alloc_symmetric(self, nbytes: int) -> SymmetricBuffer:
        """Collective: a :class:`SymmetricBuffer` of ``nbytes`` on this communicator's GPU."""
        return SymmetricBuffer(self, nbytes)

    def register_symmetric(self, tensor) -> SymmetricBuffer:
        """Collective: makes the memory ``tensor`` spans (a CUDA tensor on this
        communicator's GPU, or any object with ``__cuda_array_interface__``) a
        :class:`SymmetricBuffer` every rank maps; every rank passes the same number of bytes.
        The buffer keeps ``tensor`` alive until :meth:`SymmetricBuffer.deregister`. The memory
        must come from one ``cudaMalloc`` allocation (torch's caching allocator; not its
        expandable segments)."""
        return SymmetricBuffer(self, source=tensor)
