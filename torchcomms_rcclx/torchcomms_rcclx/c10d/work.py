"""The Work objects the "rcclx" process group returns, and the thread that completes their
futures.

A c10d Work carries the torchcomms Works of its operation (those keep the tensors alive until
the operation is complete). Three kinds of completion lie behind one class:

* done: a host operation that ran in the call (``async_op=False``), or a GPU one whose stream
  is already ordered (the future is completed at once, CUDA-aware where tensors are on a GPU);
* running: a host operation on the communicator's worker (a torchcomms HostWork), or a CUDA
  one on the communicator's internal stream (an EventWork: waiting makes the current stream
  wait for it, the host does not block);
* deferred: point-to-point calls waiting to run as one batch (see ``ProcessGroupRcclx``);
  waiting on it runs the batch first.

``get_future()`` of a running Work hands it to one completion thread per process, which waits
on it (the GIL is released while the core waits) and completes the future with the output
tensors, or with the error; DDP's communication hooks chain on that future.
"""

from __future__ import annotations

import datetime
import queue
import threading
from typing import Callable

import torch
import torch.distributed as dist
from torch.futures import Future

from torchcomms_rcclx._work import EventWork, HostWork

_RUNNING = (HostWork, EventWork)  # the torchcomms Works whose wait() does something


def _seconds(timeout) -> float | None:
    """A torch timeout (timedelta, or None / a negative sentinel meaning "the default") in
    seconds, or None for the default."""
    if timeout is None:
        return None
    if isinstance(timeout, datetime.timedelta):
        timeout = timeout.total_seconds()
    return None if timeout <= 0 else float(timeout)


def _future_devices(tensors: list[torch.Tensor]) -> list[torch.device]:
    return sorted({t.device for t in tensors if t.device.type == "cuda"}, key=str)


def completed_future(result: list[torch.Tensor]) -> Future:
    """A future already holding `result` (CUDA-aware when the tensors live on a GPU: whoever
    waits on it is ordered after the current stream)."""
    devices = _future_devices(result)
    fut = Future(devices=devices) if devices else Future()
    fut.set_result(result)
    return fut


class _Completer:
    """One daemon thread completing the futures of native Works in the order they were asked
    for (the core's worker runs a communicator's operations in order)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="rcclx-c10d-futures", daemon=True)
        self._thread.start()

    def submit(self, work: RcclxWork, fut: Future) -> None:
        self._queue.put((work, fut))

    def _run(self) -> None:
        while True:
            work, fut = self._queue.get()
            try:
                work.wait()
                fut.set_result(work.result())
            except BaseException as e:  # noqa: BLE001 - handed to the future's waiter
                fut.set_exception(e)


_COMPLETER: _Completer | None = None
_COMPLETER_LOCK = threading.Lock()


def _completer() -> _Completer:
    global _COMPLETER
    with _COMPLETER_LOCK:
        if _COMPLETER is None:
            _COMPLETER = _Completer()
        return _COMPLETER


class DoneWork(dist.Work):
    """The Work of a synchronous call: complete when returned (on CUDA tensors: ordered on
    the current stream). The lighter twin of RcclxWork, for the eager hot path."""

    def __init__(self, outputs: list[torch.Tensor]) -> None:
        super().__init__()
        self._outputs = outputs

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True

    def is_success(self) -> bool:
        return True

    def exception(self):
        return None

    def result(self) -> list[torch.Tensor]:
        return self._outputs

    def get_future(self) -> Future:
        return completed_future(self._outputs)

    def __repr__(self) -> str:
        return "RcclxWork(completed=True)"


class RcclxWork(dist.Work):
    """A c10d Work of the "rcclx" backend (see the module docstring)."""

    def __init__(
        self,
        outputs: list[torch.Tensor],
        works: list | None = None,
        run: Callable[[], None] | None = None,
        timeout: float | None = None,
        what: str = "",
    ) -> None:
        super().__init__()
        self._outputs = outputs
        self._running = [w for w in works if isinstance(w, _RUNNING)] if works else ()
        self._run = run  # deferred: runs the pending batch, which attach()es its Work here
        self._timeout = timeout
        self._what = what
        self._error: BaseException | None = None
        self._done = not self._running and run is None
        # Serialises wait / get_future of work still running (one thread may wait while the
        # completion thread does); complete work never takes it.
        self._lock = None if self._done else threading.Lock()

    def attach(self, work) -> None:
        """Called by the batch that ran this deferred operation, with its torchcomms Work."""
        self._run = None
        self._running = [work] if isinstance(work, _RUNNING) else ()
        self._done = not self._running

    def _start(self) -> None:
        if self._run is not None:
            self._run()  # attaches the batch's Work to every operation of the batch

    def wait(self, timeout=None) -> bool:
        """Blocks until the operation is complete (host); raises its error, or TimeoutError
        past `timeout` (default: the process group's timeout)."""
        if self._done and self._error is None:
            return True
        with self._lock:
            if self._error is not None:
                raise self._error
            self._start()
            if self._done:
                return True
            seconds = _seconds(timeout) or self._timeout
            try:
                for work in self._running:
                    if isinstance(work, HostWork):
                        work.wait(seconds)
                    else:
                        work.wait()  # the current stream waits; nothing to time out
            except BaseException as e:
                self._error = e
                raise
            self._done, self._running = True, ()
            return True

    def is_completed(self) -> bool:
        if self._done or self._error is not None:
            return True
        if self._run is not None:
            return False
        if all(w.is_completed() for w in self._running):
            try:
                self.wait()
            except BaseException:  # noqa: BLE001 - reported by wait() and exception()
                pass
            return True
        return False

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self) -> list[torch.Tensor]:
        return self._outputs

    def get_future(self) -> Future:
        """A future completed with the output tensors once the operation is complete (on CUDA
        tensors: at once, CUDA-aware, after the current stream was made to wait)."""
        if self._done and self._error is None:
            return completed_future(self._outputs)
        with self._lock:
            self._start()
        if not any(isinstance(w, HostWork) for w in self._running):
            try:
                self.wait()  # CUDA work: the current stream waits, the host does not
            except BaseException:  # noqa: BLE001 - the future below carries the error
                pass
        with self._lock:
            if self._error is None and self._done:
                return completed_future(self._outputs)
        fut = Future()
        _completer().submit(self, fut)
        return fut

    def __repr__(self) -> str:
        return f"RcclxWork({self._what}, completed={self._done})"
