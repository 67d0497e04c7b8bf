"""Batched point-to-point: ``comm.batch_op_create()`` collects sends and receives, ``issue()``
runs them as one rcclx_core group (every peer's transfers progress together, so a ring of
sends and receives cannot deadlock)."""

from __future__ import annotations

import enum


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
        """Adds a send of tensor to ``dst``."""
        tensor = self._comm._check("batch send", "tensor", tensor)
        self._comm._check_peer("batch send", "dst", dst)
        self.ops.append(P2POp(P2POpType.SEND, tensor, dst))

    def recv(self, tensor, src: int) -> None:
        """Adds a receive from ``src`` into tensor."""
        tensor = self._comm._check("batch recv", "tensor", tensor)
        self._comm._check_peer("batch recv", "src", src)
        self.ops.append(P2POp(P2POpType.RECV, tensor, src))

    def issue(self, async_op: bool = False, options=None, hints=None, timeout=None):
        """Runs every recorded operation together; returns a Work."""
        comm = self._comm
        core = comm._usable("batch issue")
        ops = list(self.ops)
        if timeout is None and options is not None:
            timeout = getattr(options, "timeout", None)

        def call(a, s):
            core.group_start()
            try:
                for op in ops:
                    if op.type is P2POpType.SEND:
                        core.send(op.tensor, op.peer, False, None, s)
                    else:
                        core.recv(op.tensor, op.peer, False, None, s)
            except BaseException:
                core.group_end()
                raise
            return core.group_end(a)

        return comm._run("batch issue", call, async_op, timeout, tuple(op.tensor for op in ops))
