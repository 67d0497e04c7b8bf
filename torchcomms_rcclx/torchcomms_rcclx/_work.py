"""Work: what every call of a :class:`TorchCommRCCLX` returns.

Host buffers: a synchronous call returns a Work already complete; ``async_op=True`` wraps
rcclx_core's Work (the operation runs on the communicator's worker; ``wait()`` blocks). GPU
buffers: a synchronous call ran on the current stream, so ``wait()`` has nothing to wait for;
an ``async_op=True`` call ran on the communicator's internal stream and ``wait()`` makes the
current stream wait for it (the host does not block). A GPU call's stream or event completes
also when its kernels ended early because a rank failed (their outputs are then undefined), so
both ``wait()`` and ``wait_blocking()`` of a GPU Work raise the failure any rank reported (a
GPU window's Works also the window's own: a wait of it that timed out).
"""

from __future__ import annotations

import os
import sys


class Work:
    """A call's completion: ``wait()`` and ``is_completed()``, as torchcomms' TorchWork."""

    __slots__ = ()

    def wait(self, timeout: float | None = None) -> None:
        """Returns once the result may be used (see the subclasses)."""

    def wait_blocking(self) -> None:
        """Blocks the host until the operation finished."""
        self.wait()

    def is_completed(self) -> bool:
        """True once the operation finished."""
        return True


class _DoneWork(Work):
    """A synchronous host call: finished before it was returned."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "Work(completed)"


DONE = _DoneWork()


def fail(message: str, error: BaseException | None, abort_process: bool) -> None:
    """What a timeout or a peer's failure does when the communicator was created with
    ``abort_process_on_timeout_or_error=True``: the message on stderr, then the process
    aborts (so a job with a dead rank ends instead of hanging)."""
    if abort_process:
        print(f"torchcomms_rcclx: {message}; aborting the process", file=sys.stderr, flush=True)
        os.abort()


class HostWork(Work):
    """An ``async_op=True`` call on host buffers: rcclx_core's Work, the buffers it uses (kept
    alive until it completes) and what runs once it did (copying a packed result out to a
    list of tensors)."""

    __slots__ = ("_core", "_keep", "_finish", "_timeout", "_comm", "_what")

    def __init__(self, core_work, keep, finish, timeout, comm, what):
        self._core = core_work
        self._keep = keep
        self._finish = finish
        self._timeout = timeout
        self._comm = comm
        self._what = what

    def _done(self) -> None:
        finish, self._finish, self._keep = self._finish, None, None
        if finish is not None:
            finish()

    def wait(self, timeout: float | None = None) -> None:
        """Blocks until the operation finished; raises its error, or a TimeoutError past
        `timeout` seconds (default: the call's ``timeout=``, or the communicator's
        ``set_timeout``)."""
        if self._core is None:
            return
        seconds = self._timeout if timeout is None else timeout
        try:
            finished = self._core.wait(seconds)
        except Exception as e:
            if seconds is not None and not self._core.is_completed():
                finished = False  # the wait ran out, the operation is still running
            else:
                self._comm._on_remote_error(self._what, e)
                raise
        if not finished:
            self._comm._on_timeout(self._what, seconds)
        self._core = None
        self._done()

    def is_completed(self) -> bool:
        if self._core is None:
            return True
        if not self._core.is_completed():
            return False
        self.wait()  # raises the operation's error, if any, and copies results out
        return True

    def __repr__(self) -> str:
        state = "completed" if self._core is None else "in flight"
        return f"Work({self._what}, {state})"


def raise_failure(comm, what: str, check=None) -> None:
    """Raises the RemoteError of a failure any rank of `comm` (a TorchCommRCCLX) reported, as
    the call `what` would have, then what `check` raises (a GPU window's: the timeout of one of
    its waits); nothing when there is none or the communicator is gone."""
    core = comm._core
    if core is None:
        return
    try:
        core.check_failed()
        if check is not None:
            check()
    except BaseException as e:
        comm._on_remote_error(what, e)
        raise


class StreamWork(Work):
    """A synchronous call on GPU buffers: it ran on the current stream, in order with what
    the caller enqueues next; ``is_completed()`` asks that stream (True once everything on it
    so far finished, this call included). `check`: see raise_failure."""

    __slots__ = ("_stream", "_device", "_comm", "_what", "_check")

    def __init__(self, stream: int, device, comm, what: str, check=None):
        self._stream = stream  # the cudaStream_t, as an int (a torch stream is made on demand)
        self._device = device
        self._comm = comm
        self._what = what
        self._check = check

    def wait(self, timeout: float | None = None) -> None:
        """In stream order the result may be used; raises a failure already reported."""
        raise_failure(self._comm, self._what, self._check)

    def _torch_stream(self):
        import torch

        if self._stream == 0:
            # torch's ExternalStream over the null handle neither waits for nor queries the
            # legacy default stream (measured: synchronize() returned with a kernel running).
            return torch.cuda.default_stream(self._device)
        return torch.cuda.ExternalStream(self._stream, device=self._device)

    def is_completed(self) -> bool:
        return bool(self._torch_stream().query())

    def wait_blocking(self) -> None:
        """Blocks until the stream drained; raises a failure that ended its kernels early."""
        self._torch_stream().synchronize()
        raise_failure(self._comm, self._what, self._check)


class EventWork(Work):
    """An ``async_op=True`` call on GPU buffers: it ran on the communicator's internal stream
    (which first waited for the current stream); the event marks its end. `check`: see
    raise_failure."""

    __slots__ = ("_event", "_keep", "_device", "_comm", "_what", "_check")

    def __init__(self, event, keep, device, comm, what: str, check=None):
        self._event = event
        self._keep = keep
        self._device = device
        self._comm = comm
        self._what = what
        self._check = check

    def wait(self, timeout: float | None = None) -> None:
        """The current stream waits for the operation (the host does not block); raises a
        failure already reported."""
        import torch

        torch.cuda.current_stream(self._device).wait_event(self._event)
        self._keep = None
        raise_failure(self._comm, self._what, self._check)

    def wait_blocking(self) -> None:
        """Blocks until the operation finished; raises a failure that ended it early."""
        self._event.synchronize()
        self._keep = None
        raise_failure(self._comm, self._what, self._check)

    def is_completed(self) -> bool:
        return bool(self._event.query())


class CheckedWork(Work):
    """A GPU call in a checked mode (``alltoallv_dynamic(checked=True)``): ``wait()`` blocks
    the host until the operation finished, then ``check()`` raises what its kernel recorded
    (an overflow names sender, receiver and counts) instead of the next call raising it."""

    __slots__ = ("_work", "_check")

    def __init__(self, work: Work, check):
        self._work, self._check = work, check

    def wait(self, timeout: float | None = None) -> None:
        self._work.wait_blocking()
        self._check()

    def wait_blocking(self) -> None:
        self.wait()

    def is_completed(self) -> bool:
        return self._work.is_completed()
