"""The "rcclx" process group: torch.distributed's collectives on an rcclx_core Communicator.

``create_process_group`` is what ``Backend.register_backend`` calls, once per group (the world
and every ``new_group``); each group gets its own communicator, rendezvousing in the group's
prefixed store. A host (CPU) tensor runs in the call when torch asks for a synchronous
operation and on the communicator's worker otherwise (the Work wraps the core's Work); a CUDA
tensor is enqueued on the current stream and its Work is complete for the host at once.

Point-to-point calls are deferred: ``isend``/``irecv`` (and so ``batch_isend_irecv``) record
the operation, and the recorded ones run together, as one core group, when any of their Works
is waited on or asked for its future, or before the next collective of the group. So a ring
of sends and receives larger than the transport's buffers cannot deadlock.
"""

from __future__ import annotations

import datetime
import os
from typing import Any, Callable

import torch
import torch.distributed as dist

import rcclx_core as rc
from torchcomms_rcclx.c10d.work import RcclxWork

_RedOpType = dist.ReduceOp.RedOpType
_RED_OPS = {
    _RedOpType.SUM: int(rc.RedOp.SUM),
    _RedOpType.PRODUCT: int(rc.RedOp.PROD),
    _RedOpType.MIN: int(rc.RedOp.MIN),
    _RedOpType.MAX: int(rc.RedOp.MAX),
    _RedOpType.BAND: int(rc.RedOp.BAND),
    _RedOpType.BOR: int(rc.RedOp.BOR),
    _RedOpType.BXOR: int(rc.RedOp.BXOR),
    _RedOpType.AVG: int(rc.RedOp.AVG),
    _RedOpType.PREMUL_SUM: int(rc.RedOp.PREMUL_SUM),
}

# Keyed by the op's integer value: hashing the enum itself costs a few microseconds a call.
_PLAIN_OPS = {int(k): v for k, v in _RED_OPS.items() if k != _RedOpType.PREMUL_SUM}

# The element types the core carries (float8 types move through data-movement collectives).
_DTYPES = frozenset(
    getattr(torch, name)
    for name in (
        "int8",
        "uint8",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "float8_e4m3fn",
        "float8_e5m2",
    )
    if hasattr(torch, name)
)

# The GPU the first group of this process chose; later groups use the same one.
_GROUP_DEVICE: int | None = None


def _red_op(what: str, reduce_op) -> tuple[int, float | None]:
    """The core's (op, scalar) for a torch ReduceOp (PREMUL_SUM carries its factor)."""
    kind = getattr(reduce_op, "op", reduce_op)
    if int(kind) in _PLAIN_OPS:
        return _PLAIN_OPS[int(kind)], None
    if kind not in _RED_OPS:
        raise ValueError(f"rcclx {what}: reduce op {reduce_op} is not supported")
    if kind != _RedOpType.PREMUL_SUM:
        return _RED_OPS[kind], None
    factor = getattr(reduce_op, "factor", None)
    if factor is None:
        raise ValueError(f"rcclx {what}: PREMUL_SUM needs a factor (this torch does not expose it)")
    if isinstance(factor, torch.Tensor):
        if factor.numel() != 1:
            raise ValueError(
                f"rcclx {what}: PREMUL_SUM factor must be a scalar or a 1-element tensor, "
                f"got shape {tuple(factor.shape)}"
            )
        factor = factor.item()
    return _RED_OPS[kind], float(factor)


def _pick_device(rank: int) -> int | None:
    """The GPU of this process's groups: the current CUDA device once CUDA is initialised
    (torch.cuda.set_device), else LOCAL_RANK (or the rank) modulo the GPUs; None without one."""
    global _GROUP_DEVICE
    if _GROUP_DEVICE is not None:
        return _GROUP_DEVICE
    if not torch.cuda.is_available():
        return None
    if torch.cuda.is_initialized():
        _GROUP_DEVICE = torch.cuda.current_device()
    else:
        local = int(os.environ.get("LOCAL_RANK", rank))
        _GROUP_DEVICE = local % torch.cuda.device_count()
    return _GROUP_DEVICE


def _hints(timeout: datetime.timedelta | None) -> dict[str, str] | None:
    """The group's timeout as the communicator's RCCLX_TIMEOUT_MS, unless the environment sets
    that knob (the environment wins)."""
    if timeout is None or "RCCLX_TIMEOUT_MS" in os.environ:
        return None
    ms = int(timeout.total_seconds() * 1000)
    return {"RCCLX_TIMEOUT_MS": str(ms)} if ms > 0 else None


def create_process_group(*args) -> ProcessGroupRcclx:
    """The backend's creator: ``(options, backend_options)`` with ``extended_api=True``
    (``_DistributedBackendOptions``: store, group_rank, group_size, timeout), or the plain
    ``(store, rank, size, timeout)``."""
    if len(args) == 4:
        store, rank, size, timeout = args
        name = ""
    else:
        opts = args[0]
        store, rank, size, timeout = opts.store, opts.group_rank, opts.group_size, opts.timeout
        name = str(getattr(opts, "group_id", ""))
    return ProcessGroupRcclx(store, rank, size, timeout, name)


def _flat(tensors: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.detach().reshape(-1) for t in tensors])


def _unflatten_into(flat: torch.Tensor, outputs: list[torch.Tensor]) -> None:
    offset = 0
    for t in outputs:
        n = t.numel()
        t.detach().copy_(flat[offset : offset + n].view(t.shape))
        offset += n


class ProcessGroupRcclx(dist.ProcessGroup):
    """One rank's membership of a torch.distributed group, carried by an rcclx communicator
    (see the module docstring for how operations run and complete)."""

    def __init__(
        self,
        store,
        rank: int,
        size: int,
        timeout: datetime.timedelta | None = None,
        group_name: str = "",
    ) -> None:
        super().__init__(rank, size)
        self._rank, self._size = rank, size
        self._group_name = group_name
        self._timeout = timeout.total_seconds() if timeout else None
        self._device = _pick_device(rank)
        self._comm = rc.Communicator.from_store(
            store, rank, size, prefix="rcclx", device=self._device, hints=_hints(timeout)
        )
        self._pending: list[tuple[str, torch.Tensor, int, RcclxWork]] = []

    # --- identity

    def getBackendName(self) -> str:
        return "rcclx"

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    # torch names a group through its C++ backends, which a Python process group lacks: the
    # name torch gives it is kept here (DeviceMesh and the functional collectives read it).

    def _set_group_name(self, name: str) -> None:
        self._group_name = name
        super()._set_group_name(name)

    @property
    def group_name(self) -> str:
        return self._group_name

    @property
    def communicator(self) -> rc.Communicator:
        """The rcclx_core Communicator underneath this group."""
        return self._comm

    def __repr__(self) -> str:
        return f"ProcessGroupRcclx(rank={self._rank}, size={self._size})"

    # --- shared machinery

    def _check(self, what: str, arg: str, t: Any) -> torch.Tensor:
        """`t` as a tensor the core can take, or a ValueError/TypeError naming `arg`."""
        if (
            type(t) is torch.Tensor
            and t.device.type == "cpu"
            and t.dtype in _DTYPES
            and t.is_contiguous()
        ):
            return t.detach()  # the common case, checked first: a contiguous host tensor
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"rcclx {what}: {arg} must be a torch.Tensor, got {type(t).__name__}")
        if t.device.type not in ("cpu", "cuda"):
            raise ValueError(
                f"rcclx {what}: {arg} is on device {t.device}; the rcclx backend takes cpu "
                "and cuda tensors"
            )
        if t.device.type == "cuda" and t.device.index != self._device:
            raise ValueError(
                f"rcclx {what}: {arg} is on {t.device}, but this process group runs on "
                f"{'no GPU' if self._device is None else f'cuda:{self._device}'}"
            )
        if t.dtype not in _DTYPES:
            raise TypeError(
                f"rcclx {what}: {arg} has dtype {t.dtype}, which rcclx does not carry "
                f"(supported: {', '.join(sorted(str(d)[6:] for d in _DTYPES))})"
            )
        if not t.is_contiguous():
            raise ValueError(
                f"rcclx {what}: {arg} is not contiguous (shape {tuple(t.shape)}, stride "
                f"{t.stride()}); pass a contiguous tensor"
            )
        return t.detach()

    def _same(self, what: str, arg: str, tensors: list[torch.Tensor], like: torch.Tensor) -> None:
        for i, t in enumerate(tensors):
            self._check(what, f"{arg}[{i}]", t)
            if t.dtype != like.dtype or t.device != like.device:
                raise ValueError(
                    f"rcclx {what}: {arg}[{i}] is {t.dtype} on {t.device}, expected "
                    f"{like.dtype} on {like.device}"
                )

    def _count(self, what: str, arg: str, tensors: list, want: int) -> None:
        if len(tensors) != want:
            raise ValueError(f"rcclx {what}: {arg} holds {len(tensors)} tensors, expected {want}")

    def _run(
        self,
        what: str,
        device: torch.device,
        outputs: list[torch.Tensor],
        call: Callable[[bool, int | None], Any],
        opts=None,
        keep: tuple = (),
        finish: Callable[[], None] | None = None,
    ) -> RcclxWork:
        """Runs ``call(async_op, stream)`` for tensors on `device`; a Work holding `outputs`
        (its result) and `keep` (buffers the core still reads or writes). With `finish` (a copy
        out of a staging buffer), a host operation runs synchronously and finishes here."""
        if self._pending:
            self._flush_p2p()
        if device.type == "cuda":
            call(False, torch.cuda.current_stream(device).cuda_stream)
            if finish is not None:
                finish()
            return RcclxWork(outputs, what=what)
        async_op = finish is None and bool(getattr(opts, "asyncOp", True))
        native = call(async_op, None)
        if finish is not None:
            finish()
        return RcclxWork(outputs, native, keep, timeout=self._timeout, what=what)

    # --- point-to-point (deferred; see the module docstring)

    def _p2p(self, kind: str, tensors: list[torch.Tensor], peer: int) -> RcclxWork:
        self._count(kind, "tensors", tensors, 1)
        t = self._check(kind, "tensor", tensors[0])
        if not 0 <= peer < self._size or peer == self._rank:
            raise ValueError(
                f"rcclx {kind}: peer {peer} is not another rank of this group of {self._size}"
            )
        if self._pending and self._pending[0][1].device != t.device:
            self._flush_p2p()
        work = RcclxWork(
            [tensors[0]], keep=(t,), run=self._flush_p2p, timeout=self._timeout, what=kind
        )
        self._pending.append((kind, t, peer, work))
        return work

    def _flush_p2p(self) -> None:
        """Runs the recorded point-to-point calls as one group and attaches its Work to each."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        device = pending[0][1].device
        stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else None
        comm = self._comm
        comm.group_start()
        try:
            for kind, t, peer, _ in pending:
                if kind == "send":
                    comm.send(t, peer, False, None, stream)
                else:
                    comm.recv(t, peer, False, None, stream)
        finally:
            native = comm.group_end(stream is None)
        for *_, work in pending:
            work.attach(native)

    def send(self, tensors, dstRank, tag=0):
        return self._p2p("send", tensors, dstRank)

    def recv(self, tensors, srcRank, tag=0):
        return self._p2p("recv", tensors, srcRank)

    def recv_anysource(self, tensors, tag=0):
        raise NotImplementedError("rcclx recv: a receive from any source is not supported")

    # --- collectives

    def allreduce(self, tensors, opts=None):
        # The hot path (DDP's buckets, small eager calls): one contiguous host tensor, a plain
        # op, nothing pending; the same checks as _check, without its general case.
        if len(tensors) == 1 and opts is not None and not self._pending:
            t = tensors[0]
            op = _PLAIN_OPS.get(int(opts.reduceOp.op))
            if (
                op is not None
                and type(t) is torch.Tensor
                and t.is_cpu
                and t.dtype in _DTYPES
                and t.is_contiguous()
            ):
                x = t.detach() if t.requires_grad else t
                async_op = getattr(opts, "asyncOp", True)  # torch < 2.8 has no asyncOp
                native = self._comm.all_reduce(x, None, op, None, None, async_op)
                return RcclxWork(tensors, native, (x,), timeout=self._timeout, what="all_reduce")
        what = "all_reduce"
        self._count(what, "tensors", tensors, 1)
        t = self._check(what, "tensor", tensors[0])
        op, scalar = _red_op(what, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        comm = self._comm
        return self._run(
            what,
            t.device,
            [tensors[0]],
            lambda a, s: comm.all_reduce(t, None, op, None, scalar, a, None, s),
            opts,
            keep=(t,),
        )

    def allreduce_coalesced(self, tensors, opts=None):
        what = "all_reduce_coalesced"
        if not tensors:
            return RcclxWork([], what=what)
        first = self._check(what, "tensors[0]", tensors[0])
        self._same(what, "tensors", tensors, first)
        op, scalar = _red_op(what, opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        flat = _flat(tensors)
        comm = self._comm
        return self._run(
            what,
            first.device,
            list(tensors),
            lambda a, s: comm.all_reduce(flat, None, op, None, scalar, a, None, s),
            opts,
            finish=lambda: _unflatten_into(flat, tensors),
        )

    def broadcast(self, tensors, opts=None):
        what = "broadcast"
        self._count(what, "tensors", tensors, 1)
        t = self._check(what, "tensor", tensors[0])
        root = opts.rootRank if opts is not None else 0
        comm = self._comm
        return self._run(
            what,
            t.device,
            [tensors[0]],
            lambda a, s: comm.broadcast(t, None, root, a, None, s),
            opts,
            keep=(t,),
        )

    def reduce(self, tensors, opts=None):
        what = "reduce"
        self._count(what, "tensors", tensors, 1)
        t = self._check(what, "tensor", tensors[0])
        op, scalar = _red_op(what, opts.reduceOp)
        root = opts.rootRank
        comm = self._comm
        return self._run(
            what,
            t.device,
            [tensors[0]],
            lambda a, s: comm.reduce(t, None, root, op, scalar, a, None, s),
            opts,
            keep=(t,),
        )

    def allgather(self, output_tensors, input_tensors, opts=None):
        what = "all_gather"
        self._count(what, "input_tensors", input_tensors, 1)
        self._count(what, "output_tensors", output_tensors, 1)
        inp = self._check(what, "input_tensor", input_tensors[0])
        outs = output_tensors[0]
        self._count(what, "output_tensors[0]", outs, self._size)
        self._same(what, "output_tensor_list", outs, inp)
        for i, o in enumerate(outs):
            if o.numel() != inp.numel():
                raise ValueError(
                    f"rcclx {what}: output_tensor_list[{i}] has {o.numel()} elements, the "
                    f"input {inp.numel()}"
                )
        flat = inp.new_empty(self._size * inp.numel())
        comm = self._comm
        return self._run(
            what,
            inp.device,
            list(outs),
            lambda a, s: comm.all_gather(inp, flat, a, None, s),
            opts,
            finish=lambda: _unflatten_into(flat, outs),
        )

    def _allgather_base(self, output, input, opts=None):
        what = "all_gather_into_tensor"
        inp = self._check(what, "input_tensor", input)
        out = self._check(what, "output_tensor", output)
        if out.numel() != self._size * inp.numel() or out.dtype != inp.dtype:
            raise ValueError(
                f"rcclx {what}: output_tensor is {out.numel()} x {out.dtype}, expected "
                f"{self._size * inp.numel()} x {inp.dtype} ({self._size} ranks x input)"
            )
        comm = self._comm
        return self._run(
            what,
            inp.device,
            [output],
            lambda a, s: comm.all_gather(inp, out, a, None, s),
            opts,
            keep=(inp, out),
        )

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        work = RcclxWork([])
        for o, i in zip(outputs, inputs, strict=True):
            work = self._allgather_base(o, i, opts)
        return work

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        what = "reduce_scatter"
        self._count(what, "output_tensors", output_tensors, 1)
        self._count(what, "input_tensors", input_tensors, 1)
        out = self._check(what, "output", output_tensors[0])
        ins = input_tensors[0]
        self._count(what, "input_list", ins, self._size)
        self._same(what, "input_list", ins, out)
        for i, x in enumerate(ins):
            if x.numel() != out.numel():
                raise ValueError(
                    f"rcclx {what}: input_list[{i}] has {x.numel()} elements, the output "
                    f"{out.numel()}"
                )
        op, scalar = _red_op(what, opts.reduceOp)
        flat = _flat(ins)
        comm = self._comm
        return self._run(
            what,
            out.device,
            [output_tensors[0]],
            lambda a, s: comm.reduce_scatter(flat, out, op, scalar, a, None, s),
            opts,
            keep=(flat, out),
        )

    def _reduce_scatter_base(self, output, input, opts=None):
        what = "reduce_scatter_tensor"
        inp = self._check(what, "input", input)
        out = self._check(what, "output", output)
        if inp.numel() != self._size * out.numel() or out.dtype != inp.dtype:
            raise ValueError(
                f"rcclx {what}: input is {inp.numel()} x {inp.dtype}, expected "
                f"{self._size * out.numel()} x {out.dtype} ({self._size} ranks x output)"
            )
        op, scalar = _red_op(what, opts.reduceOp)
        comm = self._comm
        return self._run(
            what,
            inp.device,
            [output],
            lambda a, s: comm.reduce_scatter(inp, out, op, scalar, a, None, s),
            opts,
            keep=(inp, out),
        )

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        work = RcclxWork([])
        for o, i in zip(outputs, inputs, strict=True):
            work = self._reduce_scatter_base(o, i, opts)
        return work

    def _split_counts(self, what: str, arg: str, t: torch.Tensor, splits) -> list[int]:
        """Element counts per rank of `t` split along dim 0 by `splits` (equal when empty)."""
        splits = list(splits or [])
        if not splits:
            if t.numel() % self._size:
                raise ValueError(
                    f"rcclx {what}: {arg} has {t.numel()} elements, not divisible by "
                    f"{self._size} ranks (pass split sizes)"
                )
            return [t.numel() // self._size] * self._size
        if len(splits) != self._size:
            raise ValueError(
                f"rcclx {what}: {arg} split sizes {splits} name {len(splits)} ranks, "
                f"expected {self._size}"
            )
        rows = t.shape[0] if t.dim() else 1
        if sum(splits) != rows or min(splits) < 0:
            raise ValueError(
                f"rcclx {what}: {arg} split sizes {splits} do not add up to its {rows} rows"
            )
        row = t.numel() // rows if rows else 0
        return [s * row for s in splits]

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        what = "all_to_all_single"
        inp = self._check(what, "input", input)
        out = self._check(what, "output", output)
        if out.dtype != inp.dtype:
            raise ValueError(f"rcclx {what}: output is {out.dtype}, input {inp.dtype}")
        send = self._split_counts(what, "input", inp, input_split_sizes)
        recv = self._split_counts(what, "output", out, output_split_sizes)
        comm = self._comm
        return self._run(
            what,
            inp.device,
            [output],
            lambda a, s: comm.all_to_all_v(inp, out, send, recv, None, None, a, None, s),
            opts,
            keep=(inp, out),
        )

    def alltoall(self, output_tensors, input_tensors, opts=None):
        what = "all_to_all"
        self._count(what, "output_tensor_list", output_tensors, self._size)
        self._count(what, "input_tensor_list", input_tensors, self._size)
        first = self._check(what, "input_tensor_list[0]", input_tensors[0])
        self._same(what, "input_tensor_list", input_tensors, first)
        self._same(what, "output_tensor_list", output_tensors, first)
        send = [t.numel() for t in input_tensors]
        recv = [t.numel() for t in output_tensors]
        flat_in = _flat(input_tensors)
        flat_out = first.new_empty(sum(recv))
        comm = self._comm
        return self._run(
            what,
            first.device,
            list(output_tensors),
            lambda a, s: comm.all_to_all_v(flat_in, flat_out, send, recv, None, None, a, None, s),
            opts,
            finish=lambda: _unflatten_into(flat_out, output_tensors),
        )

    def gather(self, output_tensors, input_tensors, opts=None):
        what = "gather"
        self._count(what, "input_tensors", input_tensors, 1)
        inp = self._check(what, "tensor", input_tensors[0])
        root = opts.rootRank
        comm = self._comm
        if self._rank != root:
            return self._run(
                what,
                inp.device,
                [],
                lambda a, s: comm.gather(inp, None, root, a, None, s),
                opts,
                keep=(inp,),
            )
        self._count(what, "output_tensors", output_tensors, 1)
        outs = output_tensors[0]
        self._count(what, "gather_list", outs, self._size)
        self._same(what, "gather_list", outs, inp)
        flat = inp.new_empty(self._size * inp.numel())
        return self._run(
            what,
            inp.device,
            list(outs),
            lambda a, s: comm.gather(inp, flat, root, a, None, s),
            opts,
            finish=lambda: _unflatten_into(flat, outs),
        )

    def scatter(self, output_tensors, input_tensors, opts=None):
        what = "scatter"
        self._count(what, "output_tensors", output_tensors, 1)
        out = self._check(what, "tensor", output_tensors[0])
        root = opts.rootRank
        flat = None
        if self._rank == root:
            self._count(what, "input_tensors", input_tensors, 1)
            ins = input_tensors[0]
            self._count(what, "scatter_list", ins, self._size)
            self._same(what, "scatter_list", ins, out)
            flat = _flat(ins)
        comm = self._comm
        return self._run(
            what,
            out.device,
            [output_tensors[0]],
            lambda a, s: comm.scatter(flat, out, root, a, None, s),
            opts,
            keep=(flat, out),
        )

    def barrier(self, opts=None):
        """A host barrier; on a group with a GPU, this process's work queued on the current
        stream finishes first (as NCCL's barrier, which synchronises its device)."""
        self._flush_p2p()
        if self._device is not None and torch.cuda.is_initialized():
            torch.cuda.current_stream(self._device).synchronize()
        native = self._comm.barrier(bool(getattr(opts, "asyncOp", True)))
        return RcclxWork([], native, timeout=self._timeout, what="barrier")

    # --- lifetime

    def shutdown(self) -> None:
        """Destroys the communicator (collective, as destroy_process_group is)."""
        self._flush_p2p()
        if not self._comm.destroyed:
            self._comm.destroy()

    def abort(self) -> None:
        """Releases the communicator without waiting for peers."""
        self._pending = []
        if not self._comm.destroyed:
            self._comm.abort()

    # --- torch's names: older releases call the underscored / _base / _tensor names, torch
    # 2.13 the *_single ones; both reach the same methods.

    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        work = RcclxWork([])
        for outs, inp in zip(output_lists, input_list, strict=True):
            work = self.allgather([outs], [inp], opts)
        return work
