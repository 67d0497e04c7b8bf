"""A rank's buffers for one size, in host memory or on its GPU, laid out out of place or in place.

A placement (``HostPlacement``, ``CudaPlacement``) is the only code that differs between the
devices: it allocates, writes the check's host inputs in, poisons outputs, reads results back
(always as host arrays in storage form, for ``check``), synchronises and names the stream a
call is enqueued on. Everything above it (the layouts here, the timers' callers, the columns,
the check) is the same for both.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rcclx_core.perf import check
from rcclx_core.perf.spec import RECV_IN_SEND, SAME, SEND_IN_RECV, Config, DTypeSpec

_SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def torch_dtype(torch, dt: DTypeSpec):
    return getattr(torch, dt.name)


def host_tensor(torch, array: np.ndarray, dt: DTypeSpec):
    """A torch tensor over ``array``'s memory (storage form) with the element type ``dt``.

    Goes through the signed integer of the same width, which every torch accepts from numpy,
    then reinterprets (bfloat16 is stored as uint16; uint32 and uint64 as themselves).
    """
    t = torch.from_numpy(array.view(_SIGNED[dt.itemsize]))
    return t.view(torch_dtype(torch, dt))


class HostPlacement:
    """Buffers in host memory (numpy arrays); calls run synchronously on the host."""

    kind = "cpu"

    def __init__(self, dt: DTypeSpec):
        self.dt = dt

    def empty(self, n: int) -> np.ndarray:
        return np.empty(n, self.dt.storage)

    def write(self, dst: np.ndarray, array: np.ndarray) -> None:
        np.copyto(dst, array)

    def poison(self, buf: np.ndarray) -> None:
        check.poison(buf)

    def download(self, buf: np.ndarray) -> np.ndarray:
        return buf

    def synchronize(self) -> None:
        pass

    def stream(self) -> dict:
        return {}  # host buffers take no stream=

    def as_torch(self, buf: np.ndarray):
        import torch

        return host_tensor(torch, buf, self.dt)


class CudaPlacement:
    """Buffers on one GPU (torch CUDA tensors); calls are enqueued on torch's current stream.

    ``stream_per_call``: read the current stream at each call (graph mode: inside a capture it
    is the capture stream); else once, here, so that eager calls time the library's enqueue and
    not torch's stream lookup.
    """

    kind = "cuda"

    def __init__(self, dt: DTypeSpec, gpu: int, torch=None, stream_per_call: bool = True):
        if torch is None:
            import torch

        self.torch, self.dt, self.gpu = torch, dt, gpu
        self.device = torch.device("cuda", gpu)
        self._stream = None if stream_per_call else {"stream": self._current_stream()}
        self._type = torch_dtype(torch, dt)
        self._signed = getattr(torch, np.dtype(_SIGNED[dt.itemsize]).name)

    def empty(self, n: int):
        return self.torch.empty(n, dtype=self._type, device=self.device)

    def write(self, dst, array: np.ndarray) -> None:
        dst.copy_(host_tensor(self.torch, array, self.dt))

    def poison(self, buf) -> None:
        if self.dt.signed and not self.dt.is_float:
            buf.fill_(self.torch.iinfo(buf.dtype).min)
        else:  # NaN for floats, the highest value of an unsigned type (as check.poison)
            buf.view(self.torch.uint8).fill_(0xFF)

    def download(self, buf) -> np.ndarray:
        return buf.view(self._signed).cpu().numpy().view(self.dt.storage)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize(self.device)

    def _current_stream(self) -> int:
        return self.torch.cuda.current_stream().cuda_stream

    def stream(self) -> dict:
        return self._stream or {"stream": self._current_stream()}

    def as_torch(self, buf):
        return buf


def make_placement(cfg: Config, gpu: int | None):
    if cfg.device != "cuda":
        return HostPlacement(cfg.dtype)
    return CudaPlacement(cfg.dtype, gpu, stream_per_call=bool(cfg.graph))


class RankBuffers:
    """One layout of a size's send and receive buffers on this rank.

    Out of place: separate buffers. In place: one buffer with the collective's overlap
    (spec.SAME, SEND_IN_RECV, RECV_IN_SEND), as nccl-tests lays it out. ``alloc`` (elements ->
    buffer) provides the buffer the input is written to, for inputs that must live in special
    memory (symmetric buffers), and ``recv_alloc`` the output of an out-of-place layout where it
    must too; other buffers come from the placement.
    """

    def __init__(
        self,
        cfg: Config,
        placement,
        nranks: int,
        rank: int,
        count: int,
        inputs: np.ndarray,
        inplace: bool,
        alloc: Callable[[int], Any] | None = None,
        recv_alloc: Callable[[int], Any] | None = None,
    ):
        coll = cfg.coll
        self.placement, self.inputs, self.inplace = placement, inputs, inplace
        n_send, n_recv = coll.send_elems(count, nranks), coll.recv_elems(count, nranks)
        alloc = alloc or placement.empty
        if not inplace:
            self.send, self.recv = alloc(n_send), (recv_alloc or placement.empty)(n_recv)
            self._output = self.recv
            return
        whole = alloc(max(n_send, n_recv))
        mine = whole[rank * count : (rank + 1) * count]
        self.send, self.recv = {
            SAME: (whole, whole),
            SEND_IN_RECV: (mine, whole),
            RECV_IN_SEND: (whole, mine),
        }[coll.inplace]
        self._output = whole  # poisoned before the inputs go in

    def reset(self) -> None:
        """Poisons the output, then writes this rank's input (in place: into the same memory)."""
        self.placement.poison(self._output)
        self.placement.write(self.send, self.inputs)

    def result(self) -> np.ndarray:
        """The receive buffer as a host array in storage form (after a synchronize)."""
        return self.placement.download(self.recv)


class Workspace:
    """One size's buffers on this rank, each layout made on first use and shared by the columns
    that use it (each column resets them before it runs, so sharing is safe)."""

    def __init__(self, cfg: Config, placement, nranks: int, rank: int, count: int):
        self.cfg, self.placement = cfg, placement
        self.nranks, self.rank, self.count = nranks, rank, count
        self.inputs = check.send_buffer(cfg, nranks, rank, count)
        self._made: dict[tuple, RankBuffers] = {}

    def get(
        self,
        inplace: bool,
        alloc: Callable[[int], Any] | None = None,
        key: str = "",
        recv_alloc: Callable[[int], Any] | None = None,
    ) -> RankBuffers:
        """The buffers laid out in place or not; ``alloc`` (and ``recv_alloc``) and their
        ``key`` name special memory."""
        k = (inplace, key)
        if k not in self._made:
            self._made[k] = RankBuffers(
                self.cfg,
                self.placement,
                self.nranks,
                self.rank,
                self.count,
                self.inputs,
                inplace,
                alloc,
                recv_alloc,
            )
        return self._made[k]
