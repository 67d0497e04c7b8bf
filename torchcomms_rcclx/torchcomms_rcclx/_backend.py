"""TorchCommRCCLX: the rcclx backend of torchcomms, and the one implementation behind every torch
front end of RCCLX: the real torchcomms (registered as ``"rcclx"``, see _register), the stand-in
``torchcomms`` and ``torchcomms_rcclx.new_comm`` (through :class:`~torchcomms_rcclx.TorchComm`),
and torch.distributed's ``"rcclx"`` process group.

Its methods take torchcomms' backend argument lists (``init(device, name, options)``,
``all_reduce(tensor, op, async_op)``, ...) plus ``hints=`` and ``timeout=`` per call, which
torchcomms' Python-backend interface does not pass on. A call converts its tensors (dtype,
operator, hints: _dtypes, _ops, _hints) and makes one rcclx_core call, which checks every
argument and decides where the call runs: host tensors on the host, GPU tensors on this
communicator's GPU, on the current stream. A host call returns None once it finished, or with
``async_op=True`` a Work (it runs on the communicator's worker); a GPU call returns a Work of
the current stream, or with ``async_op=True`` of an internal stream that first waits for the
current one (wait() also raises a failure that ended the call's kernels early). The core's
errors name the caller's arguments (``tensor``, ``output``, ...), not the core's (``sendbuf``,
``recvbuf``).
"""

from __future__ import annotations

import torch

import rcclx_core
from torchcomms_rcclx import _setup
from torchcomms_rcclx._args import plain, renamed
from torchcomms_rcclx._batch import BatchSendRecv
from torchcomms_rcclx._dtypes import for_move, for_reduction
from torchcomms_rcclx._hints import call_options, comm_knobs
from torchcomms_rcclx._ops import ReduceOp, as_reduce_op
from torchcomms_rcclx._packing import check_list, gathered, numel_list, packed_input, row_counts
from torchcomms_rcclx._work import EventWork, HostWork, StreamWork, fail

# torchcomms' collectives and point-to-point calls: every one a method of TorchCommRCCLX with
# torchcomms' argument list; TorchComm forwards exactly these.
TORCHCOMMS_CALLS = (
    "send",
    "recv",
    "broadcast",
    "all_reduce",
    "reduce",
    "all_gather",
    "all_gather_v",
    "all_gather_single",
    "reduce_scatter",
    "reduce_scatter_v",
    "reduce_scatter_single",
    "all_to_all_single",
    "all_to_all_v_single",
    "all_to_all",
    "barrier",
    "scatter",
    "gather",
    "gather_single",
)

# The core's argument names -> the caller's, per argument list.
_IN_PLACE = {"sendbuf": "tensor", "recvbuf": "tensor"}
_SINGLE = {"sendbuf": "input", "recvbuf": "output"}
_GATHER_LIST = {"sendbuf": "tensor", "recvbuf": "tensor_list", "recv_counts": "tensor_list"}
_SCATTER_LIST = {"sendbuf": "input_list", "recvbuf": "output", "counts": "input_list"}
_TENSOR_LISTS = {
    "sendbuf": "input_tensor_list",
    "recvbuf": "output_tensor_list",
    "send_counts": "input_tensor_list",
    "recv_counts": "output_tensor_list",
}
_ROOTED_LISTS = {"sendbuf": "input_tensor", "recvbuf": "output_tensor_list"}
_SCATTERED = {"sendbuf": "input_tensor_list", "recvbuf": "output_tensor"}
_SPLITS = {**_SINGLE, "send_counts": "input_split_sizes", "recv_counts": "output_split_sizes"}
_SEND = {"buf": "tensor", "peer": "dst"}
_RECV = {"buf": "tensor", "peer": "src"}

_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _current_stream(index: int) -> int:
    if _raw_stream is not None:
        return _raw_stream(index)
    return torch.cuda.current_stream(index).cuda_stream


class TorchCommRCCLX:
    """One rank's rcclx communicator with torchcomms' backend methods (see the module
    docstring). Made by ``torchcomms_rcclx.new_comm``, by torchcomms' ``new_comm("rcclx",
    ...)`` (then ``comm.get_backend_impl()``), or by ``split``."""

    # True in the class registered with the real torchcomms (_register): torchcomms learns that
    # a Python backend's Work finished only from its wait(), so a future it hands out (DDP's)
    # would never complete, or complete before the GPU did. There every call completes in stream
    # order before it returns, async_op=True included.
    _completes_in_call = False

    def __init__(self):
        self._core = None
        self._state = "new"  # "open", then "finalized" or "aborted"
        self._device = torch.device("cpu")
        self._index = None  # the GPU of the core communicator, None without one
        self._cuda = None  # that GPU as a torch.device
        self._gpu = False  # the device given at creation is a GPU
        self._name = ""
        self._options = _setup.CommOptions()
        self._rank = 0
        self._size = 0
        self._call_timeout: float | None = None  # set_timeout's, for calls without timeout=
        self._internal = None  # the GPU stream of async_op=True calls, made on first use
        self._registered: dict = {}  # data_ptr -> SymmetricBuffer, or None across hosts
        self._last_reduction: tuple = (None, None, None)  # see _reduction

    # --- creation and lifetime (torchcomms' backend interface) -----------------------------

    def init(self, device, name: str, options=None) -> None:
        """Joins every rank of the job (rank and size from the launcher's environment, see
        _setup.rank_and_size) in ``options.store``, else in a TCPStore at MASTER_ADDR /
        MASTER_PORT. ``device``: ``cpu``, or a GPU (``cuda``/``hip``; without an index
        rank % GPUs), whose communicator also serves host tensors. ``options``: torchcomms'
        CommOptions or ours: ``timeout`` bounds every wait for a peer, ``hints`` are knob
        values for this communicator (see _hints), ``abort_process_on_timeout_or_error``."""
        if self._state != "new":
            raise rcclx_core.InvalidUsageError(f"init: the communicator is already {self._state}")
        if not isinstance(name, str) or not name:
            raise rcclx_core.InvalidArgumentError(
                f"new_comm: name must be a non-empty string, got {name!r}"
            )
        opts = _setup.comm_options(options)
        rank, size = _setup.rank_and_size()
        dev = _setup.resolve_device(device, rank)
        knobs = _setup.with_timeout(comm_knobs(opts.hints, "new_comm"), opts.timeout)
        store = opts.store
        if store is None:
            store = opts.store = _setup.env_store(rank, size, opts.timeout.total_seconds())
        core = rcclx_core.Communicator.from_store(
            store,
            rank,
            size,
            prefix=_setup.store_prefix(store, name),
            device=dev.index if dev.type == "cuda" else None,
            hints=knobs,
        )
        self._attach(core, dev, name, opts)

    def _attach(self, core, device, name: str, options: _setup.CommOptions) -> TorchCommRCCLX:
        self._core = core
        self._state = "open"
        self._device = device
        self._gpu = device.type == "cuda"
        self._index = core.device
        self._cuda = None if core.device is None else torch.device("cuda", core.device)
        self._name = name
        self._options = options
        self._rank = core.rank
        self._size = core.size
        return self

    def finalize(self) -> None:
        """Collective: waits for this rank's work, then releases the communicator; a second
        call (or one after abort) does nothing."""
        core, self._core = self._core, None
        if core is None:
            return
        self._state = "finalized"
        self._registered.clear()
        if self._index is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize(self._index)
        core.destroy()

    def abort(self) -> None:
        """Releases the communicator now, without waiting for peers; later calls raise."""
        core, self._core = self._core, None
        if core is None:
            return
        self._state = "aborted"
        self._registered.clear()
        core.abort()

    def is_abort_supported(self) -> bool:
        """True: abort() releases the communicator without its peers."""
        return True

    def is_aborted(self) -> bool:
        """True once abort() was called."""
        return self._state == "aborted"

    def __del__(self):
        try:
            self.finalize()
        except Exception:  # noqa: BLE001 - a destructor logs nothing and goes on
            pass

    def set_timeout(self, timeout) -> None:
        """The timeout of later calls given no ``timeout=`` (a timedelta or seconds). The
        communicator's own deadline on every wait for a peer (new_comm's timeout) stays."""
        self._call_timeout = _setup.as_seconds(timeout, "set_timeout")

    def split(self, ranks, name: str, options=None, *, hints=None, timeout=None):
        """Collective over this communicator: every rank passes the ranks of its new group
        (the same list on every member, in the new ranks' order); ``[]`` gives None on that
        rank. The new communicator keeps this one's device, options and knobs, ``hints``
        (knob names) and ``timeout`` overriding them; torchcomms passes both in ``options``."""
        from torchcomms_rcclx._split import split

        return split(self, ranks, name, options, hints, timeout)

    # --- what the communicator is ----------------------------------------------------------

    def get_rank(self) -> int:
        """This rank's index in the communicator."""
        return self._rank

    def get_size(self) -> int:
        """Number of ranks."""
        return self._size

    def get_backend_name(self) -> str:
        """Always ``"rcclx"``."""
        return "rcclx"

    get_backend = get_backend_name

    def get_comm_name(self) -> str:
        """The name given to new_comm or split."""
        return self._name

    get_name = get_comm_name

    def get_device(self) -> torch.device:
        """The device given at creation: ``cpu`` or ``cuda:<index>``."""
        return self._device

    def get_backend_version(self) -> str:
        """The version of rcclx_core underneath."""
        return rcclx_core.__version__

    def get_options(self) -> _setup.CommOptions:
        """What the communicator was created with."""
        return self._options

    def get_core(self) -> rcclx_core.Communicator:
        """The rcclx_core Communicator underneath."""
        return self._usable("get_core")

    def __repr__(self) -> str:
        return (
            f"TorchCommRCCLX(name={self._name!r}, rank={self._rank}, size={self._size}, "
            f"device={self._device}, {self._state})"
        )

    # --- running a call --------------------------------------------------------------------

    def _usable(self, what: str):
        core = self._core
        if core is None:
            state = "not initialised yet" if self._state == "new" else f"already {self._state}"
            raise rcclx_core.InvalidUsageError(
                f"{what}: the communicator '{self._name}' was {state}"
            )
        return core

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

    def _stream(self) -> int | None:
        """The current stream of this communicator's GPU (None without one: the core then
        refuses GPU tensors, naming them)."""
        return None if self._index is None else _current_stream(self._index)

    def _run(self, what, call, gpu, async_op, timeout, keep=(), finish=None, names=None):
        """Runs ``call(async_flag, stream)`` (one rcclx_core call) where the tensors live:
        `gpu` says they are GPU tensors."""
        try:
            if gpu:
                return self._run_gpu(what, call, async_op, keep, finish)
            return self._run_host(what, call, async_op, timeout, keep, finish)
        except (rcclx_core.InvalidArgumentError, TypeError) as e:
            raise renamed(e, what, names) from None

    def _run_host(self, what, call, async_op, timeout, keep, finish):
        seconds = self._call_timeout if timeout is None else _setup.as_seconds(timeout, what)
        async_op = async_op and not self._completes_in_call
        try:
            if not async_op and seconds is None:
                call(False, None)
                if finish is not None:
                    finish()
                return None
            work = HostWork(call(True, None), keep, finish, seconds, self, what)
        except rcclx_core.RemoteError as e:
            self._on_remote_error(what, e)
            raise
        if async_op:
            return work
        work.wait()
        return None

    def _run_gpu(self, what, call, async_op, keep, finish):
        if not async_op or self._completes_in_call or self._index is None:
            stream = self._stream()
            call(False, stream)
            if finish is not None:
                finish()
            return StreamWork(stream, self._cuda, self, what)
        if self._internal is None:
            self._internal = torch.cuda.Stream(device=self._index)
        internal = self._internal
        internal.wait_stream(torch.cuda.current_stream(self._index))
        with torch.cuda.stream(internal):
            call(False, internal.cuda_stream)
            if finish is not None:
                finish()
        for t in keep:
            t.record_stream(internal)
        event = torch.cuda.Event()
        event.record(internal)
        return EventWork(event, keep, self._cuda, self, what)

    def _reduction(self, what: str, name: str, tensor, op):
        """(wire dtype, the core's operator, PREMUL_SUM's factor) of a reduction of `tensor`.
        The last answer is kept with the operator object it was for (held, so no other object
        takes its identity): a loop of calls with one operator, torchcomms' own included (whose
        conversion costs a microsecond), asks once. A factor held in a tensor is read anew."""
        last = self._last_reduction
        dtype = tensor.dtype
        if last[0] is op and last[1] is dtype:
            return last[2]
        ours = op if type(op) is ReduceOp else as_reduce_op(op, what)
        (wire, _), code = for_reduction(what, name, dtype, ours)
        found = (wire, code, None if ours.factor is None else ours.scalar())
        if ours.factor is None or isinstance(ours.factor, (int, float)):
            self._last_reduction = (op, dtype, found)
        return found

    def _check(self, what: str, name: str, t):
        """A tensor of a call the core does not check (windows, MoE routing): a contiguous
        torch.Tensor on the host or this communicator's GPU, detached when it requires grad."""
        t = plain(what, name, t)
        on_gpu = t.is_cuda and t.get_device() == self._index
        if not (t.is_cpu or on_gpu):
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} is on {t.device}, but the communicator '{self._name}' runs "
                f"on {self._device}"
            )
        if not t.is_contiguous():
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} must be contiguous, but has shape {tuple(t.shape)} and "
                f"strides {t.stride()}"
            )
        return t

    def _check_peer(self, what: str, name: str, peer) -> None:
        """A rank argument of a call the core does not check (windows)."""
        if isinstance(peer, bool) or not isinstance(peer, int) or not 0 <= peer < self._size:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} {peer!r} is not a rank of the communicator '{self._name}' "
                f"({self._size} ranks)"
            )

    # --- collectives (torchcomms' argument lists, then hints= and timeout=) -----------------

    def all_reduce(self, tensor, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None):
        """tensor = op over ranks of tensor, in place."""
        core = self._core
        if core is None:
            core = self._usable("all_reduce")
        tensor = plain("all_reduce", "tensor", tensor)
        wire, code, scalar = self._reduction("all_reduce", "tensor", tensor, op)
        algo, lp = call_options("all_reduce", hints) if hints else (None, None)
        gpu = tensor.is_cuda
        if (
            timeout is None
            and self._call_timeout is None
            and (not async_op or self._completes_in_call)
        ):
            # The common call, in one core call and no closure: host time per call is what an
            # eager GPU step pays.
            try:
                stream = self._stream() if gpu else None
                core.all_reduce(tensor, None, code, algo, scalar, False, wire, stream, lp)
            except (rcclx_core.InvalidArgumentError, TypeError) as e:
                raise renamed(e, "all_reduce", _IN_PLACE) from None
            except rcclx_core.RemoteError as e:
                self._on_remote_error("all_reduce", e)
                raise
            return StreamWork(stream, self._cuda, self, "all_reduce") if gpu else None

        def call(a, s):
            return core.all_reduce(tensor, None, code, algo, scalar, a, wire, s, lp)

        return self._run("all_reduce", call, gpu, async_op, timeout, (tensor,), None, _IN_PLACE)

    def reduce(self, tensor, root, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None):
        """On ``root``, tensor = op over ranks of tensor (in place; unchanged elsewhere)."""
        core = self._usable("reduce")
        tensor = plain("reduce", "tensor", tensor)
        wire, code, scalar = self._reduction("reduce", "tensor", tensor, op)

        def call(a, s):
            return core.reduce(tensor, None, root, code, scalar, a, wire, s)

        return self._run(
            "reduce", call, tensor.is_cuda, async_op, timeout, (tensor,), None, _IN_PLACE
        )

    def broadcast(self, tensor, root, async_op=False, hints=None, timeout=None):
        """tensor = root's tensor."""
        core = self._usable("broadcast")
        tensor = plain("broadcast", "tensor", tensor)
        wire, _ = for_move(tensor.dtype)

        def call(a, s):
            return core.broadcast(tensor, None, root, a, wire, s)

        gpu = tensor.is_cuda
        return self._run("broadcast", call, gpu, async_op, timeout, (tensor,), None, _IN_PLACE)

    def all_gather_single(self, output, input, async_op=False, hints=None, timeout=None):
        """output = every rank's input, in rank order (size x input's elements)."""
        what = "all_gather_single"
        core = self._usable(what)
        output, input = plain(what, "output", output), plain(what, "input", input)
        wire, _ = for_move(input.dtype)
        lp = call_options("all_gather", hints)[1] if hints else None

        def call(a, s):
            return core.all_gather(input, output, a, wire, s, lp)

        return self._run(
            what, call, input.is_cuda, async_op, timeout, (output, input), None, _SINGLE
        )

    def all_gather(self, tensor_list, tensor, async_op=False, hints=None, timeout=None):
        """tensor_list[r] = rank r's tensor."""
        what = "all_gather"
        core = self._usable(what)
        tensor = plain(what, "tensor", tensor)
        check_list(what, self._size, "tensor_list", tensor_list, tensor, tensor.numel())
        wire, _ = for_move(tensor.dtype)
        lp = call_options("all_gather", hints)[1] if hints else None
        flat, finish = gathered(tensor_list, tensor, [tensor.numel()] * self._size)

        def call(a, s):
            return core.all_gather(tensor, flat, a, wire, s, lp)

        keep = (flat, tensor)
        return self._run(what, call, tensor.is_cuda, async_op, timeout, keep, finish, _GATHER_LIST)

    def all_gather_v(self, tensor_list, tensor, async_op=False, hints=None, timeout=None):
        """tensor_list[r] = rank r's tensor; the sizes may differ by rank."""
        what = "all_gather_v"
        core = self._usable(what)
        tensor = plain(what, "tensor", tensor)
        check_list(what, self._size, "tensor_list", tensor_list, tensor)
        wire, scale = for_move(tensor.dtype)
        lp = call_options("all_gather", hints)[1] if hints else None
        counts = numel_list(tensor_list)
        flat, finish = gathered(tensor_list, tensor, counts)
        wire_counts = [n * scale for n in counts]

        def call(a, s):
            return core.all_gather_v(tensor, flat, wire_counts, a, wire, s, lp)

        keep = (flat, tensor)
        return self._run(what, call, tensor.is_cuda, async_op, timeout, keep, finish, _GATHER_LIST)

    def reduce_scatter_single(
        self, output, input, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of block ``rank`` of input (size blocks of output's size)."""
        what = "reduce_scatter_single"
        core = self._usable(what)
        output, input = plain(what, "output", output), plain(what, "input", input)
        wire, code, scalar = self._reduction(what, "input", input, op)
        lp = call_options("reduce_scatter", hints)[1] if hints else None

        def call(a, s):
            return core.reduce_scatter(input, output, code, scalar, a, wire, s, lp)

        return self._run(
            what, call, input.is_cuda, async_op, timeout, (output, input), None, _SINGLE
        )

    def reduce_scatter(
        self, output, input_list, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of their input_list[rank]."""
        what = "reduce_scatter"
        core = self._usable(what)
        output = plain(what, "output", output)
        check_list(what, self._size, "input_list", input_list, output, output.numel())
        wire, code, scalar = self._reduction(what, "output", output, op)
        lp = call_options("reduce_scatter", hints)[1] if hints else None
        flat = packed_input(input_list)

        def call(a, s):
            return core.reduce_scatter(flat, output, code, scalar, a, wire, s, lp)

        keep = (output, flat)
        return self._run(what, call, output.is_cuda, async_op, timeout, keep, None, _SCATTER_LIST)

    def reduce_scatter_v(
        self, output, input_list, op=ReduceOp.SUM, async_op=False, hints=None, timeout=None
    ):
        """output = op over ranks of their input_list[rank]; the sizes may differ by rank
        (input_list[r] has rank r's output size, the same on every rank)."""
        what = "reduce_scatter_v"
        core = self._usable(what)
        output = plain(what, "output", output)
        check_list(what, self._size, "input_list", input_list, output)
        wire, code, scalar = self._reduction(what, "output", output, op)
        lp = call_options("reduce_scatter", hints)[1] if hints else None
        scale = for_move(output.dtype).scale
        counts = [n * scale for n in numel_list(input_list)]
        flat = packed_input(input_list)

        def call(a, s):
            return core.reduce_scatter_v(flat, output, counts, code, scalar, a, wire, s, lp)

        keep = (output, flat)
        return self._run(what, call, output.is_cuda, async_op, timeout, keep, None, _SCATTER_LIST)

    def all_to_all_single(self, output, input, async_op=False, hints=None, timeout=None):
        """Block p of input (size equal blocks) goes to rank p, into its block ``rank``."""
        what = "all_to_all_single"
        core = self._usable(what)
        output, input = plain(what, "output", output), plain(what, "input", input)
        wire, _ = for_move(input.dtype)
        lp = call_options("all_to_all", hints)[1] if hints else None

        def call(a, s):
            return core.all_to_all(input, output, a, wire, s, lp)

        return self._run(
            what, call, input.is_cuda, async_op, timeout, (output, input), None, _SINGLE
        )

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
        output, input = plain(what, "output", output), plain(what, "input", input)
        wire, scale = for_move(input.dtype)
        send = row_counts(what, "input_split_sizes", input_split_sizes, input, scale)
        recv = row_counts(what, "output_split_sizes", output_split_sizes, output, scale)

        def call(a, s):
            return core.all_to_all_v(input, output, send, recv, None, None, a, wire, s)

        return self._run(
            what, call, input.is_cuda, async_op, timeout, (output, input), None, _SPLITS
        )

    def all_to_all(
        self, output_tensor_list, input_tensor_list, async_op=False, hints=None, timeout=None
    ):
        """input_tensor_list[p] goes to rank p, into its output_tensor_list[rank]."""
        what = "all_to_all"
        core = self._usable(what)
        check_list(what, self._size, "input_tensor_list", input_tensor_list)
        like = input_tensor_list[0]
        check_list(what, self._size, "output_tensor_list", output_tensor_list, like)
        wire, scale = for_move(like.dtype)
        send = packed_input(input_tensor_list)
        send_counts = [n * scale for n in numel_list(input_tensor_list)]
        recv_counts = numel_list(output_tensor_list)
        recv, finish = gathered(output_tensor_list, send, recv_counts)
        recv_counts = [n * scale for n in recv_counts]

        def call(a, s):
            return core.all_to_all_v(send, recv, send_counts, recv_counts, None, None, a, wire, s)

        keep = (send, recv)
        return self._run(what, call, send.is_cuda, async_op, timeout, keep, finish, _TENSOR_LISTS)

    def gather_single(self, output, input, root, async_op=False, hints=None, timeout=None):
        """On ``root``, output = every rank's input in rank order (output ignored elsewhere)."""
        what = "gather_single"
        core = self._usable(what)
        input = plain(what, "input", input)
        wire, _ = for_move(input.dtype)
        out = plain(what, "output", output) if self._rank == root else None

        def call(a, s):
            return core.gather(input, out, root, a, wire, s)

        keep = (input,) if out is None else (out, input)
        return self._run(what, call, input.is_cuda, async_op, timeout, keep, None, _SINGLE)

    def gather(
        self, output_tensor_list, input_tensor, root, async_op=False, hints=None, timeout=None
    ):
        """On ``root``, output_tensor_list[r] = rank r's input_tensor (ignored elsewhere)."""
        what = "gather"
        core = self._usable(what)
        input_tensor = plain(what, "input_tensor", input_tensor)
        wire, _ = for_move(input_tensor.dtype)
        flat = finish = None
        if self._rank == root:
            n = input_tensor.numel()
            check_list(what, self._size, "output_tensor_list", output_tensor_list, input_tensor, n)
            flat, finish = gathered(output_tensor_list, input_tensor, [n] * self._size)

        def call(a, s):
            return core.gather(input_tensor, flat, root, a, wire, s)

        keep = (input_tensor,) if flat is None else (flat, input_tensor)
        gpu = input_tensor.is_cuda
        return self._run(what, call, gpu, async_op, timeout, keep, finish, _ROOTED_LISTS)

    def scatter(
        self, output_tensor, input_tensor_list, root, async_op=False, hints=None, timeout=None
    ):
        """output_tensor = root's input_tensor_list[rank] (the list is ignored off the root)."""
        what = "scatter"
        core = self._usable(what)
        output_tensor = plain(what, "output_tensor", output_tensor)
        wire, _ = for_move(output_tensor.dtype)
        flat = None
        if self._rank == root:
            n = output_tensor.numel()
            check_list(what, self._size, "input_tensor_list", input_tensor_list, output_tensor, n)
            flat = packed_input(input_tensor_list)

        def call(a, s):
            return core.scatter(flat, output_tensor, root, a, wire, s)

        keep = (output_tensor,) if flat is None else (output_tensor, flat)
        gpu = output_tensor.is_cuda
        return self._run(what, call, gpu, async_op, timeout, keep, None, _SCATTERED)

    def send(self, tensor, dst, async_op=False, hints=None, timeout=None):
        """Sends tensor to ``dst`` (matched with its recv, in call order)."""
        core = self._usable("send")
        tensor = plain("send", "tensor", tensor)
        wire, _ = for_move(tensor.dtype)

        def call(a, s):
            return core.send(tensor, dst, a, wire, s)

        return self._run("send", call, tensor.is_cuda, async_op, timeout, (tensor,), None, _SEND)

    def recv(self, tensor, src, async_op=False, hints=None, timeout=None):
        """Receives ``src``'s send into tensor."""
        core = self._usable("recv")
        tensor = plain("recv", "tensor", tensor)
        wire, _ = for_move(tensor.dtype)

        def call(a, s):
            return core.recv(tensor, src, a, wire, s)

        return self._run("recv", call, tensor.is_cuda, async_op, timeout, (tensor,), None, _RECV)

    def barrier(self, async_op=False, hints=None, timeout=None):
        """Completes once every rank reached it (on a GPU communicator: a kernel on the
        current stream)."""
        core = self._usable("barrier")

        def call(a, s):
            return core.barrier(a, s)

        return self._run("barrier", call, self._gpu, async_op, timeout)

    def batch_op_create(self) -> BatchSendRecv:
        """An empty batch of sends and receives; ``issue()`` runs them together."""
        self._usable("batch_op_create")
        return BatchSendRecv(self)

    # --- beyond torchcomms' Python-backend interface (reach them via get_backend_impl()) -----

    def alltoallv_dynamic(self, output, input, input_split_sizes, output_split_sizes, **kwargs):
        """All-to-all-v whose split sizes are int64 tensors on the tensors' device (never read
        on the host for GPU tensors: no sync, capturable in a CUDA graph); see
        :func:`torchcomms_rcclx._dynamic.alltoallv_dynamic` for the keyword arguments."""
        from torchcomms_rcclx._dynamic import alltoallv_dynamic

        return alltoallv_dynamic(
            self, output, input, input_split_sizes, output_split_sizes, **kwargs
        )

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
        core = self._usable("tensor_register")
        tensor = self._check("tensor_register", "tensor", tensor)
        if tensor.is_cuda:
            key = tensor.data_ptr()
            if key in self._registered:
                raise rcclx_core.InvalidUsageError(
                    "tensor_register: this tensor's memory is already registered"
                )
            maps = core.num_hosts == 1
            self._registered[key] = core.register_symmetric(tensor) if maps else None

    def tensor_deregister(self, tensor) -> None:
        """Collective: undoes tensor_register."""
        self._usable("tensor_deregister")
        tensor = self._check("tensor_deregister", "tensor", tensor)
        if tensor.is_cuda:
            key = tensor.data_ptr()
            if key not in self._registered:
                raise rcclx_core.InvalidUsageError(
                    "tensor_deregister: this tensor was not registered with tensor_register"
                )
            buf = self._registered.pop(key)
            if buf is not None:
                buf.deregister()
