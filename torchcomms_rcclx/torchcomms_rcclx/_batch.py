"""Batched point-to-point: ``comm.batch_op_create()`` collects sends and receives, ``issue()``
runs them as one rcclx_core group (every peer's transfers progress together, so a ring of
sends and receives cannot deadlock)."""

from __future__ import annotations

import enum

from torchcomms_rcclx._args import plain
from torchcomms_rcclx._dtypes import for_move
from torchcomms_rcclx._work import DONE

# The core's argument names -> a batch's (a send's buffer or a receive's: the op's tensor).
_NAMES = {"buf": "tensor"}


class P2POpType(enum.Enum):
    """Which way a :class:`P2POp` moves data."""

    SEND = enum.auto()
    RECV = enum.auto()


class P2POp:
    """One send or receive of a batch."""

    __slots__ = ("type", "tensor", "peer")

    def __init__(self, type: P2POpType, tensor, peer: int):
        self.type = type
        self.tensor = tensor
        self.peer = peer

    def __repr__(self) -> str:
        return f"P2POp({self.type.name}, peer={self.peer}, numel={self.tensor.numel()})"


class BatchSendRecv:
    """Sends and receives recorded by ``send``/``recv``, run together by ``issue``."""

    def __init__(self, comm):
        self._comm = comm
        self.ops: list[P2POp] = []

    def send(self, tensor, dst: int) -> None:
        """Adds a send of tensor to ``dst`` (checked when the batch is issued)."""
        self.ops.append(P2POp(P2POpType.SEND, tensor, dst))

    def recv(self, tensor, src: int) -> None:
        """Adds a receive from ``src`` into tensor (checked when the batch is issued)."""
        self.ops.append(P2POp(P2POpType.RECV, tensor, src))

    def issue(self, async_op: bool = False, options=None, hints=None, timeout=None):
        """Runs every recorded operation together; returns a Work (torchcomms' BatchSendRecv
        always does; complete on return unless ``async_op``)."""
        what = "batch issue"
        comm = self._comm
        core = comm._usable(what)
        ops = [(op.type, plain(what, "tensor", op.tensor), op.peer) for op in self.ops]
        if timeout is None and options is not None:
            timeout = getattr(options, "timeout", None)
        gpu = bool(ops) and ops[0][1].is_cuda

        def call(a, s):
            core.group_start()
            try:
                for kind, tensor, peer in ops:
                    wire = for_move(tensor.dtype).wire
                    if kind is P2POpType.SEND:
                        core.send(tensor, peer, False, wire, s)
                    else:
                        core.recv(tensor, peer, False, wire, s)
            except BaseException:
                core.group_cancel()  # a bad operation: none of the batch runs
                raise
            return core.group_end(a)

        keep = tuple(t for _, t, _ in ops)
        work = comm._run(what, call, gpu, async_op, timeout, keep, None, _NAMES)
        return DONE if work is None else work
