"""A window on GPU tensors: the registered tensor's own memory, mapped on every rank of the
(one-host) group by CUDA IPC, with stream-ordered puts and signals (ctran.DeviceRma).

A put is a copy into the peer's mapped memory on the stream; a signal is a one-thread kernel
that, after everything earlier on the stream, stores this rank's next sequence number into its
slot of the peer's signals (system-scope release); a wait is a one-thread kernel that polls the
local slot of that peer (acquire) until it reaches the next expected number. Both counters
live in device memory, so a captured CUDA graph replays with fresh numbers; the host never
blocks. A wait past its timeout ends its kernel without the signal (no trap: the stream drains
and the GPU stays usable) and fails the window: every later call on it but release() raises a
TimeoutError naming the rank, the peer, the signal values and the timeout.
"""

from __future__ import annotations

import torch

import ctran


class _DeviceMemory:
    """``__cuda_array_interface__`` of a peer's mapped bytes; keeps the mapping alive as long
    as a tensor over it lives."""

    def __init__(self, rma, ptr: int, nbytes: int):
        self._rma = rma
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (ptr, False),
            "version": 2,
            "strides": None,
        }


class DeviceWindowMemory:
    """One rank's registered GPU window over a ctran PeerGroup of the window's own."""

    def __init__(self, group, tensor: torch.Tensor, device_index: int):
        nbytes = tensor.numel() * tensor.element_size()
        self._group = group
        self._tensor = tensor  # the window is the tensor's memory: kept alive while registered
        self._device = tensor.device
        # The tensor's pending writes (its initialisation) must land before any peer's put:
        # every rank finishes them before the collective mapping lets anyone return.
        torch.cuda.current_stream(device_index).synchronize()
        self._rma = ctran.DeviceRma(group, device_index, tensor.data_ptr(), nbytes)

    @property
    def nbytes(self) -> int:
        return self._rma.nbytes

    def put(self, src: torch.Tensor, dst: int, byte_offset: int, stream: int) -> None:
        nbytes = src.numel() * src.element_size()
        self._rma.put(dst, byte_offset, src.data_ptr(), nbytes, stream)

    def signal(self, peer: int, stream: int) -> None:
        self._rma.signal(peer, stream)

    def wait(self, peer: int, stream: int, timeout_ms: int) -> None:
        self._rma.wait_signal(peer, stream, timeout_ms)

    def check_failed(self) -> None:
        """Raises the TimeoutError of a wait of this window that timed out (reads host memory
        only: it sees the timeout once the wait's kernel recorded it)."""
        self._rma.check_failed()

    def remote(self, rank: int, like: torch.Tensor) -> torch.Tensor:
        """`rank`'s window (mapped by CUDA IPC) as a tensor shaped as `like`."""
        if rank == self._group.rank:
            self._rma.check_failed()  # a failed window maps nothing, its own tensor neither
            return self._tensor
        memory = _DeviceMemory(self._rma, self._rma.peer_ptr(rank), self._rma.nbytes)
        raw = torch.as_tensor(memory, device=self._device)
        return raw.view(like.dtype).view(like.shape)

    def attr(self, peer: int) -> str:
        return "self" if peer == self._group.rank else "cuda_ipc"

    def release(self, collective: bool) -> None:
        """Unmaps the peers' memory; `collective`: first finishes this GPU's work and waits
        for every rank (no peer still writes into the tensor)."""
        self._rma.destroy(collective)
        self._group.destroy()
        self._rma = self._tensor = None
