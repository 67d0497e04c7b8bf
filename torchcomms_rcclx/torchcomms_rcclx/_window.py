"""TorchCommWindowRCCLX: torchcomms' one-sided window on a TorchCommRCCLX communicator.

Every rank registers a tensor of the same byte size (``tensor_register``, collective); peers
then ``put`` into it, ``signal`` a peer once their puts to it are done, and ``wait_signal``
for a peer's next signal. On host tensors the window is a ctran Window (_window_host: the
registered tensor is made to view the window's shared memory); on GPU tensors it is the tensor's
own memory mapped by CUDA IPC, with stream-ordered puts and signals (_window_gpu).

Each window meets in the communicator's store under a key prefix of its own: rank 0 draws a
random token and broadcasts it over the communicator, so windows of communicators that share a
store (splits, equal names) never mix.
"""

from __future__ import annotations

import os
from operator import index

import numpy as np
import torch

import ctran
import rcclx_core
from torchcomms_rcclx._work import DONE, EventWork, StreamWork, Work, fail

_TOKEN_WORDS = 2  # 128 random bits name a window's keys in the store


class _SignalWork(Work):
    """``wait_signal(..., async_op=True)`` on host tensors: ``wait()`` blocks until the
    peer's signal arrived."""

    __slots__ = ("_window", "_peer", "_count", "_timeout")

    def __init__(self, window, peer: int, count: int, timeout):
        self._window = window
        self._peer = peer
        self._count = count
        self._timeout = timeout

    def wait(self, timeout: float | None = None) -> None:
        """Blocks until the signal arrived; raises TimeoutError past `timeout` seconds
        (default: the call's, else the communicator's timeout)."""
        if self._window is not None:
            seconds = self._timeout if timeout is None else timeout
            self._window._wait_host(self._peer, self._count, seconds)
            self._window = None

    def is_completed(self) -> bool:
        if self._window is None:
            return True
        return self._window._memory.signalled(self._peer, self._count)

    def __repr__(self) -> str:
        state = "completed" if self._window is None else "in flight"
        return f"Work(wait_signal from rank {self._peer}, {state})"


def _no_hints(what: str, hints) -> None:
    if hints:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: hints {dict(hints)!r} given, but window calls take none"
        )


class TorchCommWindowRCCLX:
    """A window of a communicator (``comm.new_window()``); empty until ``tensor_register``."""

    def __init__(self, comm):
        comm._usable("new_window")
        self._comm = comm
        self._memory = None  # HostWindowMemory or DeviceWindowMemory while registered
        self._tensor = None
        self._waits = [0] * comm._size  # waits asked for, per peer (host windows)
        self._internal = None  # GPU: the stream of async_op=True calls, made on first use

    # --- registration ---------------------------------------------------------------------

    def tensor_register(self, tensor) -> None:
        """Collective: `tensor` (contiguous, on the communicator's device, the same number of
        bytes on every rank) becomes this rank's window. Host tensors: the tensor is made to
        view the window's shared memory (its contents copied in). GPU tensors: its own memory
        is mapped by every rank. When any rank's tensor is refused, every rank raises."""
        what = "tensor_register"
        comm = self._comm
        core = comm._usable(what)
        try:
            self._check_register(tensor)
            problem, nbytes = None, tensor.numel() * tensor.element_size()
        except (TypeError, rcclx_core.Error) as e:
            problem, nbytes = e, 0
        group = self._agree(core, problem, nbytes)
        try:
            self._memory = self._register(group, tensor)
        except BaseException:
            group.destroy()
            raise
        self._tensor = tensor
        self._waits = [0] * comm._size

    def _check_register(self, tensor) -> None:
        what = "tensor_register"
        self._comm._check(what, "tensor", tensor)
        if self._memory is not None:
            raise rcclx_core.InvalidUsageError(
                f"{what}: the window already has a tensor registered (call tensor_deregister first)"
            )
        if tensor.numel() == 0:
            raise rcclx_core.InvalidArgumentError(f"{what}: tensor has 0 elements (0 bytes)")

    def _agree(self, core, problem, nbytes: int):
        """One all-gather of every rank's verdict on its tensor and its size, with rank 0's
        random token: raises on every rank if any rank failed or the sizes differ, else joins
        the window's own peer group, under a key prefix made of the token."""
        comm = self._comm
        mine = np.zeros(2 + _TOKEN_WORDS, np.int64)
        mine[0], mine[1] = problem is not None, nbytes
        if comm._rank == 0:
            mine[2:] = np.frombuffer(os.urandom(8 * _TOKEN_WORDS), np.int64)
        every = np.zeros((comm._size, mine.size), np.int64)
        core.all_gather(mine, every)
        if problem is not None:
            raise problem
        failed = np.flatnonzero(every[:, 0]).tolist()
        if failed:
            raise rcclx_core.InvalidArgumentError(
                f"tensor_register: rank(s) {failed} refused their tensor (their error says why); "
                "no window was registered"
            )
        sizes = every[:, 1].tolist()
        if len(set(sizes)) != 1:
            raise rcclx_core.InvalidArgumentError(
                f"tensor_register: tensor has {nbytes} bytes on this rank ({comm._rank}), but "
                f"every rank must pass the same number of bytes (by rank: {sizes})"
            )
        prefix = f"torchcomms_rcclx/window/{every[0, 2:].tobytes().hex()}"
        return ctran.PeerGroup.from_store(comm._options.store, comm._rank, comm._size, prefix)

    def _register(self, group, tensor):
        try:
            if self._comm._gpu:
                from torchcomms_rcclx._window_gpu import DeviceWindowMemory

                return DeviceWindowMemory(group, tensor, self._comm._index)
            from torchcomms_rcclx._window_host import HostWindowMemory

            return HostWindowMemory(group, tensor)
        except rcclx_core.Error as e:
            raise type(e)(f"tensor_register: {e}") from e

    def tensor_deregister(self) -> None:
        """Collective: waits for every rank, then releases the window. Host tensors get their
        own storage back, holding the window's final contents."""
        self._comm._usable("tensor_deregister")
        memory = self._registered("tensor_deregister")
        self._memory = self._tensor = None
        memory.release(collective=True)

    def get_tensor(self):
        """The registered tensor (which is the window), or None."""
        return self._tensor

    def get_size(self) -> int:
        """The window's size in bytes (0 when nothing is registered)."""
        return 0 if self._memory is None else self._memory.nbytes

    def __del__(self):
        memory, self._memory = self._memory, None
        if memory is not None:
            try:
                memory.release(collective=False)
            except Exception:  # noqa: BLE001 - a destructor logs nothing and goes on
                pass

    # --- one-sided operations -------------------------------------------------------------

    def put(self, tensor, dst_rank, target_offset_nelems, async_op=False, hints=None, timeout=None):
        """Copies `tensor` into `dst_rank`'s window from element `target_offset_nelems` (in
        elements of the registered tensor's dtype). Host: complete when it returns. GPU: a
        copy on the current stream (``async_op=True``: on an internal stream that first waits
        for the current one; the Work's ``wait()`` orders the current stream after it)."""
        what = "put"
        comm = self._comm
        comm._usable(what)
        memory = self._registered(what)
        _no_hints(what, hints)
        comm._check(what, "tensor", tensor)
        comm._check_peer(what, "dst_rank", dst_rank)
        offset = self._byte_offset(tensor, target_offset_nelems)
        if not comm._gpu:
            memory.put(tensor, dst_rank, offset)
            return DONE
        return self._on_stream(
            what, async_op, lambda s: memory.put(tensor, dst_rank, offset, s), keep=(tensor,)
        )

    def _byte_offset(self, tensor, target_offset_nelems) -> int:
        registered = self._tensor
        if tensor.dtype != registered.dtype:
            raise rcclx_core.InvalidArgumentError(
                f"put: tensor has dtype {tensor.dtype}, but the window holds {registered.dtype}"
            )
        try:  # any integer (a numpy or 0-d torch integer too), but not a bool
            offset = -1 if isinstance(target_offset_nelems, bool) else index(target_offset_nelems)
        except TypeError:
            offset = -1
        if offset < 0:
            raise rcclx_core.InvalidArgumentError(
                "put: target_offset_nelems must be a non-negative integer, got "
                f"{target_offset_nelems!r}"
            )
        if offset + tensor.numel() > registered.numel():
            raise rcclx_core.InvalidArgumentError(
                f"put: target_offset_nelems {offset} + tensor's {tensor.numel()} elements "
                f"exceeds the window's {registered.numel()} elements"
            )
        return offset * registered.element_size()

    def signal(self, peer_rank, async_op=False, hints=None, timeout=None):
        """Tells `peer_rank` that this rank's earlier puts to it are complete (release): its
        matching ``wait_signal`` returns after they are visible. GPU: after everything earlier
        on the current stream (and this window's async puts)."""
        what = "signal"
        comm = self._comm
        comm._usable(what)
        memory = self._registered(what)
        _no_hints(what, hints)
        comm._check_peer(what, "peer_rank", peer_rank)
        if not comm._gpu:
            memory.signal(peer_rank, comm._rank)
            return DONE
        return self._on_stream(what, async_op, lambda s: memory.signal(peer_rank, s))

    def wait_signal(self, peer_rank, async_op=False, hints=None, timeout=None):
        """Waits for `peer_rank`'s next signal (acquire; the n-th wait returns after its n-th
        signal). Host: blocks (``async_op=True``: the Work's ``wait()`` does), raising
        TimeoutError past `timeout` (default: the communicator's) and RemoteError when the
        peer died. GPU: the current stream waits, the host does not block; past `timeout` the
        wait's kernel ends without the signal and the window fails: its Works' ``wait()`` and
        ``wait_blocking()``, and every later call on it but ``tensor_deregister``, raise a
        TimeoutError naming the peer (the GPU stays usable)."""
        what = "wait_signal"
        comm = self._comm
        comm._usable(what)
        memory = self._registered(what)
        _no_hints(what, hints)
        comm._check_peer(what, "peer_rank", peer_rank)
        if comm._gpu:
            ms = self._timeout_ms(timeout)
            return self._on_stream(what, async_op, lambda s: memory.wait(peer_rank, s, ms))
        self._waits[peer_rank] += 1
        count = self._waits[peer_rank]
        if async_op:
            return _SignalWork(self, peer_rank, count, timeout)
        self._wait_host(peer_rank, count, timeout)
        return DONE

    def _wait_host(self, peer: int, count: int, timeout) -> None:
        comm = self._comm
        try:
            comm._usable("wait_signal")
            self._registered("wait_signal").wait(peer, count, self._timeout_ms(timeout))
        except (rcclx_core.RemoteError, rcclx_core.InvalidUsageError) as e:
            # A wait that failed did not consume a signal: a later wait asks for the same one.
            if self._waits[peer] == count:
                self._waits[peer] = count - 1
            if not isinstance(e, rcclx_core.RemoteError):
                raise
            message = f"wait_signal: from peer_rank {peer} on rank {comm._rank}: {e}"
            fail(message, e, comm._options.abort_process_on_timeout_or_error)
            raise type(e)(message) from e

    def _timeout_ms(self, timeout) -> int:
        if timeout is None:
            seconds = self._comm._options.timeout.total_seconds()
        else:
            seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
            if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
                raise rcclx_core.InvalidArgumentError(
                    f"wait_signal: timeout must be a positive timedelta or number of seconds, "
                    f"got {timeout!r}"
                )
        return max(1, round(seconds * 1000))

    def _on_stream(self, what: str, async_op: bool, enqueue, keep=()):
        """GPU: enqueues on the current stream (after this window's async calls), or with
        `async_op` on the window's internal stream after the current one. The Work's
        ``wait()`` and ``wait_blocking()`` also raise the window's failure."""
        comm = self._comm
        current = torch.cuda.current_stream(comm._index)
        internal = self._internal
        if not async_op:
            if internal is not None:
                current.wait_stream(internal)  # signals follow async puts
            self._memory_call(what, enqueue, current.cuda_stream)
            return StreamWork(current.cuda_stream, comm._device, comm, what, self._check_failed)
        if internal is None:
            internal = self._internal = torch.cuda.Stream(device=comm._device)
        internal.wait_stream(current)
        self._memory_call(what, enqueue, internal.cuda_stream)
        for t in keep:
            t.record_stream(internal)
        event = torch.cuda.Event()
        event.record(internal)
        return EventWork(event, keep, comm._device, comm, what, self._check_failed)

    def _memory_call(self, what: str, call, *args):
        """`call(*args)` on the window's memory; a RemoteError it raises (a GPU window's
        TimeoutError: one of its waits timed out) is handled as the communicator's: with
        ``abort_process_on_timeout_or_error`` it aborts the process."""
        try:
            return call(*args)
        except rcclx_core.RemoteError as e:
            self._comm._on_remote_error(what, e)
            raise

    def _check_failed(self) -> None:
        """GPU: raises the timeout a wait of this window recorded (without blocking: once its
        kernel has ended); nothing once the window is deregistered."""
        memory = self._memory
        if memory is not None:
            memory.check_failed()

    # --- direct access --------------------------------------------------------------------

    def map_remote_tensor(self, rank):
        """`rank`'s window as a tensor shaped as the registered one, when this process maps
        it (same host: shared memory for host tensors, CUDA IPC for GPU tensors)."""
        what = "map_remote_tensor"
        comm = self._comm
        comm._usable(what)
        memory = self._registered(what)
        comm._check_peer(what, "rank", rank)
        remote = self._memory_call(what, memory.remote, rank, self._tensor)
        if remote is None:
            raise rcclx_core.InvalidUsageError(
                f"{what}: rank {rank}'s window is not mapped in this process (it is reached "
                f"by {memory.attr(rank)}; RCCLX_TRANSPORT=shm maps ranks of one host)"
            )
        return remote

    def get_attr(self, peer):
        """How this rank reaches `peer`'s window: 'self', 'shm', 'tcp' or 'cuda_ipc'."""
        comm = self._comm
        comm._usable("get_attr")
        memory = self._registered("get_attr")
        comm._check_peer("get_attr", "peer", peer)
        return memory.attr(peer)

    def _registered(self, what: str):
        memory = self._memory
        if memory is None:
            raise rcclx_core.InvalidUsageError(
                f"{what}: the window has no tensor registered (call tensor_register first)"
            )
        return memory

    def __repr__(self) -> str:
        state = "empty" if self._memory is None else f"{self.get_size()} bytes"
        return f"TorchCommWindowRCCLX(comm={self._comm._name!r}, {state})"
