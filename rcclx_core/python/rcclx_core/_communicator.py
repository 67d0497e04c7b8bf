"""The Python Communicator: the native one (``rcclx_core._C.Communicator``) with what is
easier to say in Python: ``with comm.group():``, symmetric buffers as objects, and the
collectives' keyword arguments. The collectives here only pass their arguments on by position:
a keyword argument to a pybind11 method costs about 2 us a call, a Python call about 0.3 us, and
the host time of an eager GPU call is what these methods exist to keep small."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from rcclx_core import _C
from rcclx_core.symmetric import SymmetricBuffer

if TYPE_CHECKING:
    from rcclx_core._C import ArrayLike, DataType, RedOp, StoreLike, Work


class GroupHandle:
    """What ``with comm.group(async_op=True) as g:`` binds: after the block, ``g.work`` is the
    group's Work (None for a synchronous group or one nested in another)."""

    work: _C.Work | None = None


def _adopt(cls, native: _C.Communicator | None):
    """`native` (a factory's or split()'s result) as an instance of `cls`, or None."""
    return None if native is None else cls(native)


_Native = _C.Communicator
_SUM = int(_C.RedOp.SUM)


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
        store: StoreLike,
        rank: int,
        nranks: int,
        prefix: str = "rcclx",
        device: int | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> Communicator:
        """Joins the group rendezvousing in ``store`` (a ctran store or a torch store)."""
        hint_map = None if hints is None else dict(hints)
        return cls(_C.Communicator.from_store(store, rank, nranks, prefix, device, hint_map))

    def split(
        self, color: int, key: int | None = None, hints: Mapping[str, str] | None = None
    ) -> Communicator | None:
        """Collective: ranks passing the same ``color`` form a new communicator ordered by
        ``(key, rank)``, with this one's device and hints (``hints`` overriding them); None for
        a negative color."""
        hint_map = None if hints is None else dict(hints)
        return _adopt(type(self), super().split(color, key, hint_map))

    def split_ranks(self, ranks: Sequence[int]) -> Communicator | None:
        """Collective: the listed ranks form a new communicator; None on the others."""
        return _adopt(type(self), super().split_ranks(ranks))

    # --- collectives: every one checks its arguments in the core and runs where its buffers
    # live (see the native methods' docstrings, e.g. help(rcclx_core._C.Communicator.all_reduce))

    def all_reduce(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        op: RedOp | int = _SUM,
        algo: str | None = None,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """recvbuf = op over ranks of sendbuf (in place when recvbuf is None). GPU buffers are
        enqueued on ``stream`` (a cudaStream_t as an int; default the legacy default stream)
        and return None; host buffers run now, or on the communicator's worker with
        ``async_op=True``, which returns a :class:`Work`."""
        return _Native.all_reduce(
            self, sendbuf, recvbuf, op, algo, scalar, async_op, dtype, stream, low_precision
        )

    def reduce(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        op: RedOp | int = _SUM,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """On ``root``, recvbuf (sendbuf when None) = op over ranks of sendbuf."""
        return _Native.reduce(self, sendbuf, recvbuf, root, op, scalar, async_op, dtype, stream)

    def broadcast(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """recvbuf (sendbuf when None) = root's sendbuf."""
        return _Native.broadcast(self, sendbuf, recvbuf, root, async_op, dtype, stream)

    def all_gather(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """recvbuf = every rank's sendbuf in rank order (size x sendbuf elements)."""
        return _Native.all_gather(self, sendbuf, recvbuf, async_op, dtype, stream, low_precision)

    def all_gather_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        recv_counts: Sequence[int],
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """recvbuf = rank r's sendbuf (recv_counts[r] elements) for every r, packed."""
        return _Native.all_gather_v(
            self, sendbuf, recvbuf, recv_counts, async_op, dtype, stream, low_precision
        )

    def reduce_scatter(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        op: RedOp | int = _SUM,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """recvbuf = op over ranks of block ``rank`` of sendbuf (size blocks of recvbuf's
        length)."""
        return _Native.reduce_scatter(
            self, sendbuf, recvbuf, op, scalar, async_op, dtype, stream, low_precision
        )

    def reduce_scatter_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        counts: Sequence[int],
        op: RedOp | int = _SUM,
        scalar: float | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """recvbuf = op over ranks of block ``rank`` of sendbuf; blocks of counts[r] elements,
        packed in rank order."""
        return _Native.reduce_scatter_v(
            self, sendbuf, recvbuf, counts, op, scalar, async_op, dtype, stream, low_precision
        )

    def all_to_all(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
        low_precision: bool | None = None,
    ) -> Work | None:
        """Block p of sendbuf (size equal blocks) goes to rank p, into its block ``rank``."""
        return _Native.all_to_all(self, sendbuf, recvbuf, async_op, dtype, stream, low_precision)

    def all_to_all_v(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike,
        send_counts: Sequence[int],
        recv_counts: Sequence[int],
        send_displs: Sequence[int] | None = None,
        recv_displs: Sequence[int] | None = None,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """send_counts[p] elements of sendbuf (at send_displs[p]; packed when None) go to rank
        p, into its recvbuf at recv_displs[rank]."""
        return _Native.all_to_all_v(
            self,
            sendbuf,
            recvbuf,
            send_counts,
            recv_counts,
            send_displs,
            recv_displs,
            async_op,
            dtype,
            stream,
        )

    def alltoallv_dynamic(
        self,
        input: ArrayLike,
        output: ArrayLike,
        input_split_sizes: ArrayLike,
        output_split_sizes: ArrayLike,
        input_offsets: ArrayLike | None = None,
        output_offsets: ArrayLike | None = None,
        row_elems: int = 1,
        max_output_rows: int | None = None,
        output_split_sizes_known: bool = False,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """All-to-all-v whose split sizes are int64 arrays beside the data, never read on the
        host for GPU buffers: ``input_split_sizes[p]`` rows (of ``row_elems`` elements) go to
        rank p, packed or at ``input_offsets[p]``; ``output_split_sizes`` (and
        ``output_offsets``) are written with the rows received from each rank, packed in rank
        order. Rows past the output's capacity (or ``max_output_rows``) are dropped and the
        call fails naming the sender; ``output_split_sizes_known`` reads ``output_split_sizes``
        instead of exchanging counts."""
        return _Native.alltoallv_dynamic(
            self,
            input,
            output,
            input_split_sizes,
            output_split_sizes,
            input_offsets,
            output_offsets,
            row_elems,
            max_output_rows,
            output_split_sizes_known,
            async_op,
            dtype,
            stream,
        )

    def gather(
        self,
        sendbuf: ArrayLike,
        recvbuf: ArrayLike | None = None,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """On ``root``, recvbuf = every rank's sendbuf in rank order (ignored elsewhere)."""
        return _Native.gather(self, sendbuf, recvbuf, root, async_op, dtype, stream)

    def scatter(
        self,
        sendbuf: ArrayLike | None,
        recvbuf: ArrayLike,
        root: int = 0,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """recvbuf = block ``rank`` of root's sendbuf (sendbuf is ignored off the root)."""
        return _Native.scatter(self, sendbuf, recvbuf, root, async_op, dtype, stream)

    def send(
        self,
        buf: ArrayLike,
        peer: int,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """Sends buf to ``peer`` (matched with its recv, in call order)."""
        return _Native.send(self, buf, peer, async_op, dtype, stream)

    def recv(
        self,
        buf: ArrayLike,
        peer: int,
        async_op: bool = False,
        dtype: DataType | int | None = None,
        stream: int | None = None,
    ) -> Work | None:
        """Receives ``peer``'s send into buf."""
        return _Native.recv(self, buf, peer, async_op, dtype, stream)

    def barrier(self, async_op: bool = False, stream: int | None = None) -> Work | None:
        """Returns once every rank reached it; with ``stream=``, a kernel on that stream."""
        return _Native.barrier(self, async_op, stream)

    def group_end(self, async_op: bool = False) -> Work | None:
        """Ends a group; the outermost one runs its calls (their Work with async_op=True)."""
        return _Native.group_end(self, async_op)

    def group_cancel(self) -> None:
        """Leaves every open level of the group: none of its recorded calls runs (every rank
        should cancel the same group; a peer whose group ran waits until its timeout)."""
        _Native.group_cancel(self)

    @contextlib.contextmanager
    def group(self, async_op: bool = False) -> Iterator[GroupHandle]:
        """Records the calls made inside the ``with`` block and runs them together on exit;
        when the block raises, none of them runs (the group is cancelled)."""
        handle = GroupHandle()
        self.group_start()
        try:
            yield handle
        except BaseException:
            self.group_cancel()
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
