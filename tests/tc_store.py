"""A launch's store as a torch.distributed Store: torchcomms takes torch stores only, and the
launch's (a ctran TcpStore hosted by the launching process for the whole launch) outlives every
rank, which a TCPStore hosted by rank 0 would not."""

from __future__ import annotations

import torch.distributed


class _TorchStore(torch.distributed.Store):
    """A ctran store behind torch's Store interface (a Python subclass torch accepts)."""

    def __init__(self, inner):
        super().__init__()
        self._inner = inner

    def set(self, key, value):
        self._inner.set(key, value if isinstance(value, bytes) else bytes(value))

    def get(self, key):
        return self._inner.get(key)

    def add(self, key, value):
        return self._inner.add(key, value)

    def check(self, keys):
        return self._inner.check(keys)

    def wait(self, keys, timeout=None):
        for key in keys:
            self._inner.get(key)

    def delete_key(self, key):
        return self._inner.delete_key(key)


def connect(host: str, port: int) -> torch.distributed.Store:
    """The launch store at host:port (from a process the launcher did not start)."""
    import ctran

    return _TorchStore(ctran.TcpStore(host, port))


def LaunchStore(ctx) -> torch.distributed.Store:  # noqa: N802 - reads as the class it makes
    """This rank's launch store (`ctx`: the launcher's RankContext)."""
    return _TorchStore(ctx.store())
