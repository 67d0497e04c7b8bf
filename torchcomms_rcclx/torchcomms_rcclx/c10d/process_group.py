"""The "rcclx" process group: torch.distributed's collectives on a :class:`TorchCommRCCLX`.

``create_process_group`` is what ``Backend.register_backend`` calls, once per group (the world
and every ``new_group``); each group gets its own communicator, rendezvousing in the group's
prefixed store. This layer only translates: torch's argument lists and options become one call
of the torchcomms communicator, which checks the tensors (naming the argument), packs lists and
runs the core call; its Work becomes a c10d Work. One group serves host and GPU tensors
(``"cpu:rcclx,cuda:rcclx"``) with one communicator, which runs each call where its tensors are.

Works follow torch.distributed's NCCL semantics. A synchronous operation runs in the call on
host tensors and on the current stream for CUDA tensors. An asynchronous one runs on the
communicator's worker (host tensors) or on the communicator's internal stream, after the work
already queued on the current stream (CUDA tensors); its Work's ``wait()`` blocks the host, or
makes the then current stream wait (the host does not block). FSDP2, which issues collectives
on streams of its own and orders its compute after them through ``wait()``, relies on this.

Point-to-point calls are deferred: ``isend``/``irecv`` (and so ``batch_isend_irecv``) record
the operation, and the recorded ones run together, as one batch, when any of their Works is
waited on or asked for its future, or before the next collective of the group. So a ring of
sends and receives larger than the transport's buffers cannot deadlock.
"""

from __future__ import annotations

import datetime
import os

import torch
import torch.distributed as dist

import rcclx_core as rc
from torchcomms_rcclx import _setup
from torchcomms_rcclx._backend import TorchCommRCCLX
from torchcomms_rcclx._ops import C10D_OPS as _C10D_OPS
from torchcomms_rcclx._ops import ReduceOp, from_c10d
from torchcomms_rcclx._packing import copy_out, packed_input
from torchcomms_rcclx.c10d.work import DoneWork, RcclxWork

_CPU = torch.device("cpu")
_C10D_SUM = dist.ReduceOp.RedOpType.SUM
# torch < 2.8 has no asyncOp: its host work is asynchronous.
_HAS_ASYNC_OP = hasattr(dist.AllreduceOptions(), "asyncOp")

# The GPU the first group of this process chose; later groups use the same one.
_GROUP_DEVICE: int | None = None


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


def _communicator(store, rank, size, timeout, name) -> TorchCommRCCLX:
    """A communicator of the group's ranks, meeting in the group's store; failures raise (a
    process group never aborts the process)."""
    device = _pick_device(rank)
    options = _setup.CommOptions(
        abort_process_on_timeout_or_error=False, timeout=timeout, store=store
    )
    core = rc.Communicator.from_store(
        store,
        rank,
        size,
        prefix="rcclx",
        device=device,
        hints=_setup.with_timeout({}, timeout) or None,
    )
    where = _CPU if device is None else torch.device("cuda", device)
    name = f"rcclx group {name}" if name else "rcclx"
    return TorchCommRCCLX()._attach(core, where, name, options)


class ProcessGroupRcclx(dist.ProcessGroup):
    """One rank's membership of a torch.distributed group, carried by a torchcomms
    communicator (see the module docstring for how operations run and complete)."""

    def __init__(
        self,
        store=None,
        rank: int = 0,
        size: int = 1,
        timeout: datetime.timedelta | None = None,
        group_name: str = "",
        comm: TorchCommRCCLX | None = None,
    ) -> None:
        owns = comm is None
        if comm is None:
            comm = _communicator(store, rank, size, timeout, group_name)
        super().__init__(comm.get_rank(), comm.get_size())
        self._rank, self._size = comm.get_rank(), comm.get_size()
        self._group_name = group_name
        self._timeout = timeout.total_seconds() if timeout else None
        self._comm = comm
        self._owns = owns  # finalized by shutdown
        self._pending: list[tuple[str, torch.Tensor, int, RcclxWork]] = []
        self._done = DoneWork([])  # the Work of every synchronous all_reduce (see allreduce)

    @classmethod
    def from_comm(cls, comm: TorchCommRCCLX, group_name: str = "") -> ProcessGroupRcclx:
        """A process group over an existing communicator (which stays the caller's: shutdown
        leaves it open)."""
        return cls(group_name=group_name or comm.get_name(), comm=comm)

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
    def comm(self) -> TorchCommRCCLX:
        """The rcclx backend of this group."""
        return self._comm

    @property
    def communicator(self) -> rc.Communicator:
        """The rcclx_core Communicator underneath this group."""
        return self._comm.get_core()

    def __repr__(self) -> str:
        return f"ProcessGroupRcclx(rank={self._rank}, size={self._size})"

    # --- shared machinery

    @staticmethod
    def _one(what: str, arg: str, tensors) -> torch.Tensor:
        if len(tensors) != 1:
            raise ValueError(f"rcclx {what}: {arg} holds {len(tensors)} tensors, expected 1")
        return tensors[0]

    def _start(self, opts) -> bool:
        """Runs recorded point-to-point calls first; whether host work runs asynchronously
        (torch < 2.8 has no asyncOp: asynchronous)."""
        if self._pending:
            self._flush_p2p()
        return bool(opts.asyncOp) if _HAS_ASYNC_OP and opts is not None else True

    def _work(self, what: str, outputs, *works) -> RcclxWork:
        return RcclxWork(outputs, list(works), timeout=self._timeout, what=what)

    @staticmethod
    def _op(what: str, opts) -> ReduceOp:
        return ReduceOp.SUM if opts is None else from_c10d(opts.reduceOp, what)

    # --- point-to-point (deferred; see the module docstring)

    def _p2p(self, kind: str, tensors, peer: int) -> RcclxWork:
        t = self._one(kind, "tensors", tensors)
        self._comm._check(kind, "tensor", t)  # now: the batch that runs it comes later
        if not 0 <= peer < self._size or peer == self._rank:
            raise ValueError(
                f"rcclx {kind}: peer {peer} is not another rank of this group of {self._size}"
            )
        if self._pending and self._pending[0][1].device != t.device:
            self._flush_p2p()
        work = RcclxWork([t], run=self._flush_p2p, timeout=self._timeout, what=kind)
        self._pending.append((kind, t, peer, work))
        return work

    def _flush_p2p(self) -> None:
        """Runs the recorded point-to-point calls as one batch and attaches its Work to each."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        first = pending[0][1]
        batch = self._comm.batch_op_create()
        for kind, t, peer, _ in pending:
            (batch.send if kind == "send" else batch.recv)(t, peer)
        work = batch.issue(async_op=not first.is_cuda)
        for *_, w in pending:
            w.attach(work)

    def send(self, tensors, dstRank, tag=0):
        return self._p2p("send", tensors, dstRank)

    def recv(self, tensors, srcRank, tag=0):
        return self._p2p("recv", tensors, srcRank)

    def recv_anysource(self, tensors, tag=0):
        raise NotImplementedError("rcclx recv: a receive from any source is not supported")

    # --- collectives

    def allreduce(self, tensors, opts=None):
        # The hot path (DDP's buckets, small eager calls), so _one / _start / _work inline; the
        # backend detaches a tensor that requires grad.
        if self._pending:
            self._flush_p2p()
        if len(tensors) != 1:
            self._one("all_reduce", "tensors", tensors)
        if opts is None:
            op, async_op = ReduceOp.SUM, True
        else:
            async_op = opts.asyncOp if _HAS_ASYNC_OP else True
            reduce_op = opts.reduceOp
            # Comparing the op with a RedOpType runs in C++ (0.1 us); reading .op and converting
            # it costs about 1 us, so the common SUM skips it.
            if reduce_op == _C10D_SUM:
                op = ReduceOp.SUM
            else:
                op = _C10D_OPS.get(int(reduce_op.op)) or from_c10d(reduce_op, "all_reduce")
        work = self._comm.all_reduce(tensors[0], op, async_op)
        if not async_op:
            # torch only waits on a synchronous call's Work (dist.all_reduce returns None), so
            # one complete Work serves every such call of the group.
            done = self._done
            done._outputs = tensors
            return done
        return RcclxWork(tensors, (work,), None, self._timeout, "all_reduce")

    def allreduce_coalesced(self, tensors, opts=None):
        what = "all_reduce_coalesced"
        self._start(opts)
        if not tensors:
            return self._work(what, [])
        flat = packed_input(tensors)
        # Synchronous: the result is copied back into the tensors when the call returns.
        self._comm.all_reduce(flat, self._op(what, opts))
        if flat.untyped_storage().data_ptr() != tensors[0].untyped_storage().data_ptr():
            copy_out(flat, list(tensors), [t.numel() for t in tensors])()
        return self._work(what, list(tensors))

    def broadcast(self, tensors, opts=None):
        async_op = self._start(opts)
        t = self._one("broadcast", "tensors", tensors)
        root = opts.rootRank if opts is not None else 0
        work = self._comm.broadcast(t, root, async_op)
        return self._work("broadcast", tensors, work)

    def reduce(self, tensors, opts=None):
        async_op = self._start(opts)
        t = self._one("reduce", "tensors", tensors)
        comm = self._comm
        op = self._op("reduce", opts)
        work = comm.reduce(t, opts.rootRank, op, async_op)
        return self._work("reduce", tensors, work)

    def allgather(self, output_tensors, input_tensors, opts=None):
        async_op = self._start(opts)
        t = self._one("all_gather", "input_tensors", input_tensors)
        outs = self._one("all_gather", "output_tensors", output_tensors)
        comm = self._comm
        work = comm.all_gather(outs, t, async_op)
        return self._work("all_gather", list(outs), work)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        async_op = self._start(opts)
        works, outputs = [], []
        for outs, t in zip(output_lists, input_list, strict=True):
            comm = self._comm
            works.append(comm.all_gather(outs, t, async_op))
            outputs += outs
        return self._work("all_gather_coalesced", outputs, *works)

    def _allgather_base(self, output, input, opts=None):
        async_op = self._start(opts)
        comm = self._comm
        work = comm.all_gather_single(output, input, async_op)
        return self._work("all_gather_into_tensor", [output], work)

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        async_op = self._start(opts)
        works = []
        for o, i in zip(outputs, inputs, strict=True):
            comm = self._comm
            works.append(comm.all_gather_single(o, i, async_op))
        return self._work("all_gather_into_tensor_coalesced", list(outputs), *works)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        async_op = self._start(opts)
        out = self._one("reduce_scatter", "output_tensors", output_tensors)
        ins = self._one("reduce_scatter", "input_tensors", input_tensors)
        comm = self._comm
        op = self._op("reduce_scatter", opts)
        work = comm.reduce_scatter(out, ins, op, async_op)
        return self._work("reduce_scatter", output_tensors, work)

    def _reduce_scatter_base(self, output, input, opts=None):
        async_op = self._start(opts)
        comm = self._comm
        op = self._op("reduce_scatter_tensor", opts)
        work = comm.reduce_scatter_single(output, input, op, async_op)
        return self._work("reduce_scatter_tensor", [output], work)

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        async_op = self._start(opts)
        works = []
        for o, i in zip(outputs, inputs, strict=True):
            comm = self._comm
            op = self._op("reduce_scatter_tensor_coalesced", opts)
            works.append(comm.reduce_scatter_single(o, i, op, async_op))
        return self._work("reduce_scatter_tensor_coalesced", list(outputs), *works)

    def _equal_splits(self, what: str, arg: str, t) -> list[int]:
        rows = t.shape[0] if t.dim() else 1
        if rows % self._size:
            raise ValueError(
                f"rcclx {what}: {arg} has {rows} rows, not divisible by {self._size} ranks "
                "(pass split sizes)"
            )
        return [rows // self._size] * self._size

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        what = "all_to_all_single"
        async_op = self._start(opts)
        comm = self._comm
        if not output_split_sizes and not input_split_sizes:
            work = comm.all_to_all_single(output, input, async_op)
        else:
            recv = list(output_split_sizes) or self._equal_splits(what, "output", output)
            send = list(input_split_sizes) or self._equal_splits(what, "input", input)
            work = comm.all_to_all_v_single(output, input, recv, send, async_op)
        return self._work(what, [output], work)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        async_op = self._start(opts)
        comm = self._comm
        work = comm.all_to_all(output_tensors, input_tensors, async_op)
        return self._work("all_to_all", list(output_tensors), work)

    def gather(self, output_tensors, input_tensors, opts=None):
        async_op = self._start(opts)
        t = self._one("gather", "input_tensors", input_tensors)
        comm = self._comm
        root = opts.rootRank
        outs = self._one("gather", "output_tensors", output_tensors) if self._rank == root else None
        work = comm.gather(outs, t, root, async_op)
        return self._work("gather", list(outs or []), work)

    def scatter(self, output_tensors, input_tensors, opts=None):
        async_op = self._start(opts)
        out = self._one("scatter", "output_tensors", output_tensors)
        comm = self._comm
        root = opts.rootRank
        ins = self._one("scatter", "input_tensors", input_tensors) if self._rank == root else None
        work = comm.scatter(out, ins, root, async_op)
        return self._work("scatter", output_tensors, work)

    def barrier(self, opts=None):
        """Every rank reached it; on a group with a GPU in use, this process's work queued on
        the current stream has finished too (a barrier on the stream, then a wait for the
        stream, as NCCL's barrier synchronises its device)."""
        async_op = self._start(opts)
        comm = self._comm
        if comm.get_device().type == "cuda" and torch.cuda.is_initialized():
            comm.barrier()
            torch.cuda.current_stream(comm.get_device()).synchronize()
            return self._work("barrier", [])
        return self._work("barrier", [], comm.barrier(async_op))

    # --- lifetime

    def shutdown(self) -> None:
        """Finalizes the communicator (collective, as destroy_process_group is); one made by
        from_comm stays its owner's."""
        self._flush_p2p()
        if self._owns:
            self._comm.finalize()

    def abort(self) -> None:
        """Releases the communicator without waiting for peers."""
        self._pending = []
        self._comm.abort()

    # --- torch's names: older releases call the underscored / _base / _tensor names, torch
    # 2.13 the *_single ones; both reach the same methods.

    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base
