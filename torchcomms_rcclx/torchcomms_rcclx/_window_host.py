"""A window on host tensors: a ctran Window (shared memory, or tcp between hosts or when
RCCLX_TRANSPORT=tcp) whose bytes the registered tensor is made to view.

A ctran Window owns its memory, so registering copies the tensor's contents into it and then
points the tensor itself (``Tensor.set_``) at the window's bytes: the caller's tensor object is
the window until deregistration, which copies the window's final contents back into the
tensor's own storage and points the tensor at it again. Other views of that original storage
do not see puts while the tensor is registered.

Signal slot ``r`` of a rank's window counts the signals rank ``r`` sent it; ``wait_signal``
counts the waits per peer, so the n-th wait returns after the n-th signal.
"""

from __future__ import annotations

import ctypes

import torch


def _bytes_tensor(window, memory, nbytes: int) -> torch.Tensor:
    """A uint8 tensor over `memory` (a memoryview of window bytes) that keeps `window` alive
    as long as any tensor over it lives (ctran frees the bytes with the window)."""
    array = (ctypes.c_uint8 * nbytes).from_buffer(memory)
    array._window = window  # the tensor holds the array, the array holds the window
    return torch.frombuffer(array, dtype=torch.uint8)


class HostWindowMemory:
    """One rank's registered host window over a ctran PeerGroup of the window's own."""

    def __init__(self, group, tensor: torch.Tensor):
        nbytes = tensor.numel() * tensor.element_size()
        self._group = group
        self._window = group.create_window(nbytes, num_signals=group.nranks)
        self._bytes = _bytes_tensor(self._window, self._window.buffer, nbytes)
        self._bytes.copy_(tensor.detach().reshape(-1).view(torch.uint8))
        self._own = (tensor.untyped_storage(), tensor.storage_offset(), tensor.shape)
        self._stride = tensor.stride()
        self._tensor = tensor
        with torch.no_grad():
            tensor.set_(self._bytes.view(tensor.dtype).view(tensor.shape))
        # No peer may put before every rank copied its initial contents in.
        group.bootstrap.barrier()

    @property
    def nbytes(self) -> int:
        return self._window.nbytes

    def put(self, src: torch.Tensor, dst: int, byte_offset: int) -> None:
        """Copies `src` into `dst`'s window; complete (src reusable) on return."""
        flat = src.detach().reshape(-1).view(torch.uint8)
        self._window.put(dst, byte_offset, flat.numpy())

    def signal(self, peer: int, rank: int) -> None:
        self._window.signal(peer, rank, 1)

    def wait(self, peer: int, count: int, timeout_ms: int) -> None:
        """Blocks until `peer` signalled `count` times in all."""
        self._window.wait_signal(peer, count, peer, timeout_ms)

    def signalled(self, peer: int, count: int) -> bool:
        return self._window.read_signal(peer) >= count

    def remote(self, rank: int, like: torch.Tensor) -> torch.Tensor | None:
        """`rank`'s window as a tensor shaped as `like`, or None when it is not mapped here."""
        memory = self._window.peer_buffer(rank)
        if memory is None:
            return None
        raw = _bytes_tensor(self._window, memory, self._window.nbytes)
        return raw.view(like.dtype).view(like.shape)

    def attr(self, peer: int) -> str:
        return self._group.transport_to(peer)

    def release(self, collective: bool) -> None:
        """Gives the tensor its own storage back (with the window's final contents) and
        closes the group; `collective`: first waits for every rank (no peer still puts)."""
        if collective:
            self._group.bootstrap.barrier()
        storage, offset, shape = self._own
        with torch.no_grad():
            own = torch.empty(0, dtype=self._tensor.dtype)
            own.set_(storage, offset, shape, self._stride).copy_(self._tensor)
            self._tensor.set_(storage, offset, shape, self._stride)
        self._group.destroy()
        # The window's bytes stay mapped while a tensor from remote() or get_tensor() taken
        # before deregistration still refers to them.
        self._window = self._bytes = self._tensor = None
