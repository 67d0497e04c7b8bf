"""The Work objects the "rcclx" process group returns, and the thread that completes their
futures.

A Work holds the tensors of its operation until the operation is complete (the core reads and
writes them after the call returns). Three kinds of completion lie behind one class:

* done: a host operation that ran in the call (``async_op=False``), or a GPU one whose stream
  is already ordered (the future is completed at once, CUDA-aware where tensors are on a GPU);
* native: a host operation on the communicator's worker (an ``rcclx_core.Work``);
* deferred: point-to-point calls waiting to run as one group (see ``ProcessGroupRcclx``);
  waiting on it runs the group first.

``get_future()`` of a native Work hands it to one completion thread per process, which waits on
the core's Work (the GIL is released while it waits) and completes the future with the output
tensors, or with the error; DDP's communication hooks chain on that future.
"""

from __future__ import annotations

import datetime
import queue
import threading
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch.futures import Future


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


class RcclxWork(dist.Work):
    """A c10d Work of the "rcclx" backend (see the module docstring)."""

    def __init__(
        self,
        outputs: list[torch.Tensor],
        native: Any = None,
        keep: tuple = (),
        run: Callable[[], None] | None = None,
        timeout: float | None = None,
        what: str = "",
    ) -> None:
        super().__init__()
        self._outputs = outputs
        self._native = native  # rcclx_core.Work, or None once complete
        self._keep = keep  # tensors the core may still touch
        self._run = run  # deferred: runs the pending group, which attach()es its Work here
        self._timeout = timeout
        self._what = what
        self._error: BaseException | None = None
        self._done = native is None and run is None
        self._lock = threading.Lock()

    def attach(self, native: Any) -> None:
        """Called by the group that ran this deferred operation: its Work (None: complete)."""
        self._run, self._native = None, native
        self._done = native is None
        if self._done:
            self._keep = ()

    def _start(self) -> None:
        if self._run is not None:
            self._run()  # attaches the group's Work to every operation of the group

    def wait(self, timeout=None) -> bool:
        """Blocks until the operation is complete (host); raises its error, or TimeoutError
        past `timeout` (default: the process group's timeout)."""
        with self._lock:
            if self._error is not None:
                raise self._error
            self._start()
            if self._done:
                return True
            seconds = _seconds(timeout) or self._timeout
            try:
                finished = self._native.wait(seconds)
            except BaseException as e:
                self._error = e
                raise
            if finished is False:
                self._error = TimeoutError(
                    f"rcclx: {self._what} did not complete within {seconds} s"
                )
                raise self._error
            self._done, self._native, self._keep = True, None, ()
            return True

    def is_completed(self) -> bool:
        if self._done or self._error is not None:
            return True
        if self._run is not None:
            return False
        if self._native.is_completed():
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
        """A future completed with the output tensors once the operation is complete."""
        with self._lock:
            self._start()
            if self._error is None and self._done:
                return completed_future(self._outputs)
        fut = Future()
        _completer().submit(self, fut)
        return fut

    def __repr__(self) -> str:
        return f"RcclxWork({self._what}, completed={self._done})"
