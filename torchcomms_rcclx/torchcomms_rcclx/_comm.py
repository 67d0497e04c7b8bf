"""TorchCommRCCLX, the communicator ``new_comm("rcclx", ...)`` returns: torchcomms' methods,
each checking its tensors (torchcomms' argument names in the errors), then one rcclx_core call.

Host tensors run synchronously, or on the communicator's worker with ``async_op=True``; GPU
tensors run on the current stream, or with ``async_op=True`` on an internal stream that first
waits for the current one. The list forms (``all_gather``, ``reduce_scatter``, ``all_to_all``,
``gather``, ``scatter``) run on one packed buffer: tensors that already lie back to back in one
storage are used in place, others are copied in or out once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

import rcclx_core
from torchcomms_rcclx import _dynamic, _setup, _split
from torchcomms_rcclx._batch import BatchSendRecv
from torchcomms_rcclx._ops import ReduceOp, as_reduce_op
from torchcomms_rcclx._packing import copy_out, numel_list, packed, packed_input
from torchcomms_rcclx._work import DONE, EventWork, HostWork, StreamWork, Work, fail

_DTYPES = frozenset(
    {
        torch.int8,
        torch.uint8,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.float32,
        torch.float64,
        torch.bfloat16,
        *(getattr(torch, n) for n in ("uint32", "uint64") if hasattr(torch, n)),
        *(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)),
    }
)
_LP_CALLS = frozenset({"all_reduce", "all_gather", "reduce_scatter", "all_to_all"})
_TRUE, _FALSE = frozenset({"1", "true", "yes", "on"}), frozenset({"0", "false", "no", "off"})
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(index: int) -> int:
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


class TorchCommRCCLX:
    """A rank's communicator with torchcomms' methods, over an ``rcclx_core.Communicator``.

    Every collective takes ``async_op`` (default False), ``hints`` (per-call: ``algo`` for
    all_reduce, ``low_precision`` "1"/"0" for all_reduce, all_gather, reduce_scatter and
    all_to_all) and ``timeout`` (a timedelta or seconds; enforced on host tensors), and returns
    a :class:`Work`.
    """

    def __init__(
        self, core, device, name: str, options: _setup.CommOptions, owns_core: bool = True
    ):
        self._core = core
        self._owns_core = owns_core  # False: a sibling view (see on_device); finalize detaches
        self._state = "open"  # "finalized" or "aborted" once _core is None
        self._device = device
        self._gpu = device.type == "cuda"
        self._index = device.index
        self._name = name
        self._options = options
        self._rank = core.rank
        self._size = core.size
        self._call_timeout: float | None = None  # set_timeout's, for calls without timeout=
        self._internal = None  # the GPU stream of async_op=True calls, made on first use
        self._registered: dict = {}  # data_ptr -> SymmetricBuffer, or None across hosts

    # --- what the communicator is ---------------------------------------------------------

    def get_rank(self) -> int:
        """This rank's index in the communicator."""
        return self._rank

    def get_size(self) -> int:
        """Number of ranks."""
        return self._size

    def get_name(self) -> str:
        """The name given to new_comm or split."""
        return self._name

    def get_device(self) -> torch.device:
        """Where collectives run: ``cpu`` or ``cuda:<index>``."""
        return self._device

    def get_backend(self) -> str:
        """Always ``"rcclx"``."""
        return "rcclx"

    def get_backend_version(self) -> str:
        """The version of rcclx_core underneath."""
        return rcclx_core.__version__

    def get_options(self) -> _setup.CommOptions:
        """What the communicator was created with."""
        return self._options

    def on_device(self, device) -> TorchCommRCCLX:
        """This communicator for tensors on `device` (``cpu``, or this communicator's GPU): the
        same ranks and core, calls checked and run for that placement. The view does not own
        the communicator (its finalize only detaches it). torch.distributed groups serve host
        and GPU tensors with one communicator through this."""
        return TorchCommRCCLX(self._core, device, self._name, self._options, owns_core=False)

    def __repr__(self) -> str:
        return (
            f"TorchCommRCCLX(name={self._name!r}, rank={self._rank}, size={self._size}, "
            f"device={self._device}, {self._state})"
        )

    # --- lifecycle ------------------------------------------------------------------------

    def finalize(self) -> None:
        """Collective: waits for this rank's work, then releases the communicator; a second
        call (or one after abort) does nothing."""
        core, self._core = self._core, None
        if core is None:
            return
        self._state = "finalized"
        self._registered.clear()
        if not self._owns_core:
            return
        if self._gpu:
            torch.cuda.synchronize(self._index)
        core.destroy()

    def abort(self) -> None:
        """Releases the communicator now, without waiting for peers; later calls raise."""
        core, self._core = self._core, None
        if core is None:
            return
        self._state = "aborted"
        self._registered.clear()
        if self._owns_core:
            core.abort()

    def is_abort_supported(self) -> bool:
        """True: abort() releases the communicator without its peers."""
        return True

    def is_aborted(self) -> bool:
        """True once abort() was called."""
        return self._state == "aborted"

    def set_timeout(self, timeout) -> None:
        """The timeout of later calls given no ``timeout=`` (a timedelta or seconds). The
        communicator's own deadline on every wait for a peer (new_comm's timeout) stays."""
        self._call_timeout = _setup.as_seconds(timeout, "set_timeout")

    def __del__(self):
        try:
            self.finalize()
        except Exception:  # noqa: BLE001 - a destructor logs nothing and goes on
            pass

    # --- checks ---------------------------------------------------------------------------

    def _usable(self, what: str):
        core = self._core
        if core is None:
            raise rcclx_core.InvalidUsageError(
                f"{what}: the communicator '{self._name}' was already {self._state}"
            )
        return core

    def _check(self, what: str, name: str, t):
        """`t` as the core takes it, or an error naming `name`: the tensor itself, detached when
        it requires grad (a collective moves data; autograd does not see it, as with NCCL)."""
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what}: {name} must be a torch.Tensor, got {type(t).__name__}")
        on_device = (t.is_cuda and t.get_device() == self._index) if self._gpu else t.is_cpu
        if not on_device:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} is on {t.device}, but the communicator '{self._name}' runs "
                f"on {self._device}"
            )
        if not t.is_contiguous():
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} must be contiguous, but has shape {tuple(t.shape)} and "
                f"strides {t.stride()}"
            )
        if t.dtype not in _DTYPES:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} has dtype {t.dtype}, which rcclx does not support"
            )
        return t.detach() if t.requires_grad else t

    def _check_list(self, what: str, name: str, tensors, like=None, numel=None) -> None:
        if not isinstance(tensors, Sequence) or len(tensors) != self._size:
            got = len(tensors) if isinstance(tensors, Sequence) else type(tensors).__name__
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} must be a list of {self._size} tensors (one per rank), got {got}"
            )
        for i, t in enumerate(tensors):
            self._check(what, f"{name}[{i}]", t)
            if like is not None and t.dtype != like.dtype:
                raise rcclx_core.InvalidArgumentError(
                    f"{what}: {name}[{i}] has dtype {t.dtype}, but the other tensors have "
                    f"{like.dtype}"
                )
            if numel is not None and t.numel() != numel:
                raise rcclx_core.InvalidArgumentError(
                    f"{what}: {name}[{i}] has {t.numel()} elements but needs {numel}"
                )

    def _same_dtype(self, what: str, output, input) -> None:
        if output.dtype != input.dtype:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: output has dtype {output.dtype} but input has {input.dtype}"
            )

    def _check_numel(self, what: str, name: str, t, want: int, why: str) -> None:
        if t.numel() != want:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} has {t.numel()} elements but needs {want} ({why})"
            )

    def _check_peer(self, what: str, name: str, peer) -> None:
        if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < self._size:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} {peer!r} is not a rank of the communicator '{self._name}' "
                f"({self._size} ranks)"
            )

    def _call_hints(self, what: str, hints: Mapping[str, str] | None):
        """Per-call hints as (algo, low_precision)."""
        algo = low_precision = None
        for key, value in hints.items():
            k = key.lower() if isinstance(key, str) else key
            if k in ("algo", "rcclx_allreduce_algo") and what == "all_reduce":
                algo = str(value)
            elif k in ("low_precision", "rccl_low_precision_enable") and what in _LP_CALLS:
                v = str(value).lower()
                if v not in _TRUE and v not in _FALSE:
                    raise rcclx_core.InvalidArgumentError(
                        f"{what}: hints[{key!r}]={value!r} must be 1 or 0"
                    )
                low_precision = v in _TRUE
            else:
                allowed = ["algo"] if what == "all_reduce" else []
                allowed += ["low_precision"] if what in _LP_CALLS else []
                raise rcclx_core.InvalidArgumentError(
                    f"{what}: hint {key!r} is not one this call takes "
                    f"({', '.join(allowed) or 'none'})"
                )
        return algo, low_precision

    # --- running a call -------------------------------------------------------------------

    def _on_remote_error(self, what: str, error: BaseException) -> None:
        if isinstance(error, rcclx_core.RemoteError):
            fail(
                f"{what} failed on rank {self._rank}: {error}",
                error,
                self._options.abort_process_on_timeout_or_error,
            )

    def _on_timeout(self, what: str, seconds: float) -> None:
        message = (
            f"{what}: not complete within {seconds:g} s on rank {self._rank} of the "
            f"communicator '{self._name}' (the call's timeout)"
        )
        fail(message, None, self._options.abort_process_on_timeout_or_error)
        raise rcclx_core.TimeoutError(message)

    def _run(self, what, call, async_op, timeout, keep=(), finish=None) -> Work:
        """Runs ``call(async_flag, stream)`` (one rcclx_core call) where the tensors live."""
        if self._gpu:
            return self._run_gpu(what, call, async_op, keep, finish)
        seconds = self._call_timeout if timeout is None else _setup.as_seconds(timeout, what)
        try:
            if not async_op and seconds is None:
                call(False, None)
                if finish is not None:
                    finish()
                return DONE
            work = HostWork(call(True, None), keep, finish, seconds, self, what)
        except rcclx_core.RemoteError as e:
            self._on_remote_error(what, e)
            raise
        if async_op:
            return work
        work.wait()
        return DONE

    def _run_gpu(self, what, call, async_op, keep, finish) -> Work:
        index = self._index
        if not async_op:
            stream = _current_stream(index)
            call(False, stream)
            if finish is not None:
                finish()
            return StreamWork(stream, self._device, self, what)
        if self._internal is None:
            self._internal = torch.cuda.Stream(device=self._device)
        internal = self._internal
        internal.wait_stream(torch.cuda.current_stream(index))
        with torch.cuda.stream(internal):
            call(False, internal.cuda_stream)
            if finish is not None:
                finish()
        for t in keep:
            t.record_stream(internal)
        event = torch.cuda.Event()
        event.record(internal)
        return EventWork(event, keep, self._device, self, what)

    # --- collectives ----------------------------------------------------------------------

    def all_reduce(self, tensor, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None):
        """tensor = op over ranks of tensor, in place."""
        core = self._core
        if core is None:
            self._usable("all_reduce")  # raises
        tensor = self._check("all_reduce", "tensor", tensor)
        if type(op) is not ReduceOp:
            op = as_reduce_op(op, "all_reduce")
        algo, lp = (None, None) if hints is None else self._call_hints("all_reduce", hints)
        code = op.code
        scalar = None if op.factor is None else op.scalar()
        if not async_op and timeout is None and self._call_timeout is None:
            # The common call, in one core call and no closure: host time per call is what
            # an eager GPU step pays.
            stream = _current_stream(self._index) if self._gpu else None
            try:
                core.all_reduce(tensor, None, code, algo, scalar, False, None, stream, lp)
            except rcclx_core.RemoteError as e:
                self._on_remote_error("all_reduce", e)
                raise
            return StreamWork(stream, self._device, self, "all_reduce") if self._gpu else DONE

        def call(a, s):
            return core.all_reduce(tensor, None, code, algo, scalar, a, None, s, lp)

        return self._run("all_reduce", call, async_op, timeout, (tensor,))

    def reduce(self, tensor, root, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None):
        """On ``root``, tensor = op over ranks of tensor (in place; unchanged elsewhere)."""
        core = self._usable("reduce")
        tensor = self._check("reduce", "tensor", tensor)
        self._check_peer("reduce", "root", root)
        op = as_reduce_op(op, "reduce")
        self._no_hints("reduce", hints)
        code, scalar = op.code, op.scalar()

        def call(a, s):
            return core.reduce(tensor, None, root, code, scalar, a, None, s)

        return self._run("reduce", call, async_op, timeout, (tensor,))

    def broadcast(self, tensor, root, async_op=False, hints=None, timeout=None):
        """tensor = root's tensor."""
        core = self._usable("broadcast")
        tensor = self._check("broadcast", "tensor", tensor)
        self._check_peer("broadcast", "root", root)
        self._no_hints("broadcast", hints)

        def call(a, s):
            return core.broadcast(tensor, None, root, a, None, s)

        return self._run("broadcast", call, async_op, timeout, (tensor,))

    def _no_hints(self, what: str, hints) -> None:
        if hints:
            self._call_hints(what, hints)  # raises, naming the first

    def all_gather_single(self, output, input, async_op=False, hints=None, timeout=None):
        """output = every rank's input, in rank order (size x input's elements)."""
        what = "all_gather_single"
        core = self._usable(what)
        output = self._check(what, "output", output)
        input = self._check(what, "input", input)
        self._same_dtype(what, output, input)
        self._check_numel(
            what,
            "output",
            output,
            self._size * input.numel(),
            f"{self._size} ranks x input's {input.numel()}",
        )
        _, lp = (None, None) if hints is None else self._call_hints("all_gather", hints)

        def call(a, s):
            return core.all_gather(input, output, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (output, input))

    def all_gather(self, tensor_list, tensor, async_op=False, hints=None, timeout=None):
        """tensor_list[r] = rank r's tensor."""
        what = "all_gather"
        core = self._usable(what)
        tensor = self._check(what, "tensor", tensor)
        self._check_list(what, "tensor_list", tensor_list, tensor, tensor.numel())
        _, lp = (None, None) if hints is None else self._call_hints("all_gather", hints)
        flat = packed(tensor_list)
        finish = None
        if flat is None:
            flat = tensor.new_empty(self._size * tensor.numel())
            finish = copy_out(flat, tensor_list, [tensor.numel()] * self._size)

        def call(a, s):
            return core.all_gather(tensor, flat, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (flat, tensor), finish)

    def all_gather_v(self, tensor_list, tensor, async_op=False, hints=None, timeout=None):
        """tensor_list[r] = rank r's tensor; the sizes may differ by rank."""
        what = "all_gather_v"
        core = self._usable(what)
        tensor = self._check(what, "tensor", tensor)
        self._check_list(what, "tensor_list", tensor_list, tensor)
        self._check_numel(
            what,
            f"tensor_list[{self._rank}]",
            tensor_list[self._rank],
            tensor.numel(),
            "this rank's tensor",
        )
        _, lp = (None, None) if hints is None else self._call_hints("all_gather", hints)
        counts = numel_list(tensor_list)
        flat = packed(tensor_list)
        finish = None
        if flat is None:
            flat = tensor.new_empty(sum(counts))
            finish = copy_out(flat, tensor_list, counts)

        def call(a, s):
            return core.all_gather_v(tensor, flat, counts, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (flat, tensor), finish)

    def reduce_scatter_single(
        self, output, input, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of block ``rank`` of input (size blocks of output's size)."""
        what = "reduce_scatter_single"
        core = self._usable(what)
        output = self._check(what, "output", output)
        input = self._check(what, "input", input)
        self._same_dtype(what, output, input)
        self._check_numel(
            what,
            "input",
            input,
            self._size * output.numel(),
            f"{self._size} ranks x output's {output.numel()}",
        )
        op = as_reduce_op(op, what)
        _, lp = (None, None) if hints is None else self._call_hints("reduce_scatter", hints)
        code, scalar = op.code, op.scalar()

        def call(a, s):
            return core.reduce_scatter(input, output, code, scalar, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (output, input))

    def reduce_scatter(
        self, output, input_list, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of their input_list[rank]."""
        what = "reduce_scatter"
        core = self._usable(what)
        output = self._check(what, "output", output)
        self._check_list(what, "input_list", input_list, output, output.numel())
        op = as_reduce_op(op, what)
        _, lp = (None, None) if hints is None else self._call_hints("reduce_scatter", hints)
        code, scalar = op.code, op.scalar()
        flat = packed_input(input_list)

        def call(a, s):
            return core.reduce_scatter(flat, output, code, scalar, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (output, flat))

    def reduce_scatter_v(
        self, output, input_list, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of their input_list[rank]; the sizes may differ by rank
        (input_list[r] has rank r's output size, the same on every rank)."""
        what = "reduce_scatter_v"
        core = self._usable(what)
        output = self._check(what, "output", output)
        self._check_list(what, "input_list", input_list, output)
        self._check_numel(
            what,
            "output",
            output,
            input_list[self._rank].numel(),
            f"input_list[{self._rank}]'s size",
        )
        op = as_reduce_op(op, what)
        _, lp = (None, None) if hints is None else self._call_hints("reduce_scatter", hints)
        code, scalar = op.code, op.scalar()
        counts = numel_list(input_list)
        flat = packed_input(input_list)

        def call(a, s):
            return core.reduce_scatter_v(flat, output, counts, code, scalar, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (output, flat))

    def all_to_all_single(self, output, input, async_op=False, hints=None, timeout=None):
        """Block p of input (size equal blocks) goes to rank p, into its block ``rank``."""
        what = "all_to_all_single"
        core = self._usable(what)
        output = self._check(what, "output", output)
        input = self._check(what, "input", input)
        self._same_dtype(what, output, input)
        self._check_numel(what, "output", output, input.numel(), "the same as input")
        if input.numel() % self._size:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: input has {input.numel()} elements, not a multiple of {self._size} ranks"
            )
        _, lp = (None, None) if hints is None else self._call_hints("all_to_all", hints)

        def call(a, s):
            return core.all_to_all(input, output, a, None, s, lp)

        return self._run(what, call, async_op, timeout, (output, input))

    def all_to_all_v_single(
        self,
        output,
        input,
        output_split_sizes,
        input_split_sizes,
        async_op=False,
        hints=None,
        timeout=None,
    ):
        """input_split_sizes[p] rows of input (dimension 0, packed) go to rank p, which
        receives them into its output at its output_split_sizes[rank] rows."""
        what = "all_to_all_v_single"
        core = self._usable(what)
        output = self._check(what, "output", output)
        input = self._check(what, "input", input)
        self._same_dtype(what, output, input)
        self._no_hints(what, hints)
        send = self._counts(what, "input_split_sizes", input_split_sizes, input)
        recv = self._counts(what, "output_split_sizes", output_split_sizes, output)

        def call(a, s):
            return core.all_to_all_v(input, output, send, recv, None, None, a, None, s)

        return self._run(what, call, async_op, timeout, (output, input))

    def alltoallv_dynamic(
        self,
        output,
        input,
        input_split_sizes,
        output_split_sizes,
        *,
        output_offsets=None,
        input_offsets=None,
        row_elems=None,
        max_output_rows=None,
        output_split_sizes_known=False,
        checked=False,
        async_op=False,
        timeout=None,
    ):
        """All-to-all-v whose split sizes are int64 tensors on the communicator's device
        (never read on the host for GPU tensors: no sync, capturable in a CUDA graph).
        ``input_split_sizes[p]`` rows of input (``row_elems`` elements each; default: a row
        of dimension 0) go to rank p, packed or at ``input_offsets[p]``; the call writes
        ``output_split_sizes`` (rows from each rank) and ``output_offsets`` (their exclusive
        prefix sum), the rows packed in rank order. The capacity is the output's rows (at most
        ``max_output_rows``): rows past it are dropped and the call fails (GPU: the next call)
        naming sender, receiver and counts. ``checked=True`` (GPU tensors, not in a graph
        capture) raises that from ``work.wait()`` instead, which blocks the host until the
        kernel finished (the synchronous call waits at once). ``output_split_sizes_known``
        reads ``output_split_sizes`` instead of exchanging counts."""
        return _dynamic.alltoallv_dynamic(
            self,
            output,
            input,
            input_split_sizes,
            output_split_sizes,
            output_offsets=output_offsets,
            input_offsets=input_offsets,
            row_elems=row_elems,
            max_output_rows=max_output_rows,
            output_split_sizes_known=output_split_sizes_known,
            checked=checked,
            async_op=async_op,
            timeout=timeout,
        )

    def _counts(self, what, name, splits, t) -> list[int]:
        """Rows per rank (dimension 0 of `t`) as element counts."""
        try:
            splits = list(splits)
        except TypeError:
            raise TypeError(
                f"{what}: {name} must be a sequence of {self._size} integers, "
                f"got {type(splits).__name__}"
            ) from None
        if len(splits) != self._size or any(
            isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in splits
        ):
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} must be {self._size} non-negative integers, got {splits}"
            )
        rows = t.shape[0] if t.dim() else 1
        if sum(splits) != rows:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} {splits} add up to {sum(splits)} rows, but the tensor has {rows}"
            )
        row = math.prod(t.shape[1:]) if t.dim() else 1
        return [s * row for s in splits]

    def all_to_all(
        self, output_tensor_list, input_tensor_list, async_op=False, hints=None, timeout=None
    ):
        """input_tensor_list[p] goes to rank p, into its output_tensor_list[rank]."""
        what = "all_to_all"
        core = self._usable(what)
        self._check_list(what, "input_tensor_list", input_tensor_list)
        self._check_list(what, "output_tensor_list", output_tensor_list, input_tensor_list[0])
        self._no_hints(what, hints)
        send = packed_input(input_tensor_list)
        recv_counts = numel_list(output_tensor_list)
        send_counts = numel_list(input_tensor_list)
        if send.dtype != input_tensor_list[0].dtype:  # torch.cat promoted mixed dtypes
            raise rcclx_core.InvalidArgumentError(
                f"{what}: input_tensor_list's tensors must share one dtype"
            )
        recv = packed(output_tensor_list)
        finish = None
        if recv is None:
            recv = send.new_empty(sum(recv_counts))
            finish = copy_out(recv, output_tensor_list, recv_counts)

        def call(a, s):
            return core.all_to_all_v(send, recv, send_counts, recv_counts, None, None, a, None, s)

        return self._run(what, call, async_op, timeout, (send, recv), finish)

    def gather_single(self, output, input, root, async_op=False, hints=None, timeout=None):
        """On ``root``, output = every rank's input in rank order (output ignored elsewhere)."""
        what = "gather_single"
        core = self._usable(what)
        input = self._check(what, "input", input)
        self._check_peer(what, "root", root)
        self._no_hints(what, hints)
        out = None
        if self._rank == root:
            output = self._check(what, "output", output)
            self._same_dtype(what, output, input)
            self._check_numel(
                what,
                "output",
                output,
                self._size * input.numel(),
                f"{self._size} ranks x input's {input.numel()}",
            )
            out = output

        def call(a, s):
            return core.gather(input, out, root, a, None, s)

        return self._run(what, call, async_op, timeout, (input,) if out is None else (out, input))

    def gather(
        self, output_tensor_list, input_tensor, root, async_op=False, hints=None, timeout=None
    ):
        """On ``root``, output_tensor_list[r] = rank r's input_tensor (ignored elsewhere)."""
        what = "gather"
        core = self._usable(what)
        input_tensor = self._check(what, "input_tensor", input_tensor)
        self._check_peer(what, "root", root)
        self._no_hints(what, hints)
        flat = finish = None
        if self._rank == root:
            n = input_tensor.numel()
            self._check_list(what, "output_tensor_list", output_tensor_list, input_tensor, n)
            flat = packed(output_tensor_list)
            if flat is None:
                flat = input_tensor.new_empty(self._size * n)
                finish = copy_out(flat, output_tensor_list, [n] * self._size)

        def call(a, s):
            return core.gather(input_tensor, flat, root, a, None, s)

        keep = (input_tensor,) if flat is None else (flat, input_tensor)
        return self._run(what, call, async_op, timeout, keep, finish)

    def scatter(
        self, output_tensor, input_tensor_list, root, async_op=False, hints=None, timeout=None
    ):
        """output_tensor = root's input_tensor_list[rank] (the list is ignored off the root)."""
        what = "scatter"
        core = self._usable(what)
        output_tensor = self._check(what, "output_tensor", output_tensor)
        self._check_peer(what, "root", root)
        self._no_hints(what, hints)
        flat = None
        if self._rank == root:
            self._check_list(
                what, "input_tensor_list", input_tensor_list, output_tensor, output_tensor.numel()
            )
            flat = packed_input(input_tensor_list)

        def call(a, s):
            return core.scatter(flat, output_tensor, root, a, None, s)

        keep = (output_tensor,) if flat is None else (output_tensor, flat)
        return self._run(what, call, async_op, timeout, keep)

    def send(self, tensor, dst, async_op=False, hints=None, timeout=None):
        """Sends tensor to ``dst`` (matched with its recv, in call order)."""
        core = self._usable("send")
        tensor = self._check("send", "tensor", tensor)
        self._check_peer("send", "dst", dst)
        self._no_hints("send", hints)

        def call(a, s):
            return core.send(tensor, dst, a, None, s)

        return self._run("send", call, async_op, timeout, (tensor,))

    def recv(self, tensor, src, async_op=False, hints=None, timeout=None):
        """Receives ``src``'s send into tensor."""
        core = self._usable("recv")
        tensor = self._check("recv", "tensor", tensor)
        self._check_peer("recv", "src", src)
        self._no_hints("recv", hints)

        def call(a, s):
            return core.recv(tensor, src, a, None, s)

        return self._run("recv", call, async_op, timeout, (tensor,))

    def barrier(self, async_op=False, hints=None, timeout=None):
        """Completes once every rank reached it (GPU: a kernel on the stream)."""
        core = self._usable("barrier")
        self._no_hints("barrier", hints)

        def call(a, s):
            return core.barrier(a, s)

        return self._run("barrier", call, async_op, timeout)

    def batch_op_create(self) -> BatchSendRecv:
        """An empty batch of sends and receives; ``issue()`` runs them together."""
        self._usable("batch_op_create")
        return BatchSendRecv(self)

    # --- communicators and memory ---------------------------------------------------------

    def split(self, ranks, name: str, hints=None, timeout=None):
        """Collective over this communicator: every rank passes the ranks of its new group
        (the same list on every member, in the new ranks' order); ``[]`` gives None on that
        rank. A list leaving out the caller, or naming a rank twice, raises."""
        return _split.split(self, ranks, name, hints, timeout)

    def new_window(self):
        """Collective: an empty window of this communicator; ``tensor_register(t)`` (collective,
        the same size on every rank) makes ``t``'s memory the window peers ``put`` into (see
        :mod:`torchcomms_rcclx._window`)."""
        from torchcomms_rcclx._window import TorchCommWindowRCCLX

        return TorchCommWindowRCCLX(self)

    def tensor_register(self, tensor) -> None:
        """Collective: GPU tensors become symmetric buffers every rank maps (the faster
        zero-copy paths). On the CPU, and on GPUs whose ranks span hosts (where no rank maps
        another's memory), a check of the tensor and nothing else: registration is a hint, as
        with NCCL, so code that registers runs everywhere."""
        self._usable("tensor_register")
        tensor = self._check("tensor_register", "tensor", tensor)
        if self._gpu:
            key = tensor.data_ptr()
            if key in self._registered:
                raise rcclx_core.InvalidUsageError(
                    "tensor_register: this tensor's memory is already registered"
                )
            maps = self._core.num_hosts == 1
            self._registered[key] = self._core.register_symmetric(tensor) if maps else None

    def tensor_deregister(self, tensor) -> None:
        """Collective: undoes tensor_register."""
        self._usable("tensor_deregister")
        tensor = self._check("tensor_deregister", "tensor", tensor)
        if self._gpu:
            key = tensor.data_ptr()
            if key not in self._registered:
                raise rcclx_core.InvalidUsageError(
                    "tensor_deregister: this tensor was not registered with tensor_register"
                )
            buf = self._registered.pop(key)
            if buf is not None:
                buf.deregister()
