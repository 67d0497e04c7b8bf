"""How one column's op is timed: eager on the host, eager on a GPU, or replays of a CUDA graph.

Every timer takes an argument-less call (one op on fixed buffers) and returns statistics in
microseconds per op: mean, median, min, max over the timed iterations; the eager GPU timer adds
``host``, the same statistics of the host's time to issue one call.

- ``HostTimer`` (``--device cpu``): each call runs synchronously; perf_counter around it.
- ``CudaEagerTimer`` (``--device cuda``, the default mode): the calls are issued back to back on
  the current stream, each between two CUDA events recorded just before and just after it; an
  op's GPU time is the interval between the two. Where the GPU is the bottleneck (a backlog of
  queued ops) that is the op's own time; where the host is, the stream waits for the call to be
  issued, and the interval is the host's issue time plus the op's. perf_counter around each
  call gives the host's enqueue time per call.
- ``CudaGraphTimer`` (``--graph N``): N ops captured in one CUDA graph; each timed iteration is
  one replay queued behind a short GPU sleep, so the host's launch of the replay is not timed;
  time per op = replay time / N (the method of the GPU figures in docs/measurements/).
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from rcclx_core.perf.spec import Config

# ~100 us at an H200's clock: longer than the host takes to queue a replay behind it.
QUEUE_SLEEP_CYCLES = 200_000


def statistics(times_us) -> dict:
    t = np.asarray(times_us, dtype=np.float64)
    return {
        "mean": float(t.mean()),
        "median": float(np.median(t)),
        "min": float(t.min()),
        "max": float(t.max()),
    }


class HostTimer:
    """Warm-up calls, then ``cfg.iters`` calls timed one by one."""

    def __init__(self, cfg: Config, barrier: Callable[[], Any]):
        self.cfg, self.barrier = cfg, barrier

    def time(self, call: Callable[[], Any]) -> dict:
        self.barrier()
        for _ in range(self.cfg.warmup_calls):
            call()
        times = np.empty(self.cfg.iters)
        for i in range(self.cfg.iters):
            start = time.perf_counter()
            call()
            times[i] = time.perf_counter() - start
        return statistics(times * 1e6)

    def run_once(self, call: Callable[[], Any], reset: Callable[[], None]) -> None:
        """Resets the buffers and runs one call (for the check)."""
        reset()
        call()


class CudaEagerTimer:
    """``cfg.warmup_calls`` warm-up calls, then ``cfg.iters`` calls issued back to back, each
    between two events."""

    def __init__(self, cfg: Config, barrier: Callable[[], Any], torch):
        self.cfg, self.barrier, self.torch = cfg, barrier, torch

    def time(self, call: Callable[[], Any]) -> dict:
        cuda, n = self.torch.cuda, self.cfg.iters
        for _ in range(self.cfg.warmup_calls):
            call()
        cuda.synchronize()
        self.barrier()
        starts = [cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [cuda.Event(enable_timing=True) for _ in range(n)]
        host = np.empty(n)
        for i in range(n):
            starts[i].record()
            begin = time.perf_counter()
            call()
            host[i] = time.perf_counter() - begin
            ends[i].record()
        ends[-1].synchronize()
        gpu = [a.elapsed_time(b) * 1e3 for a, b in zip(starts, ends)]  # ms -> us
        return {**statistics(gpu), "host": statistics(host * 1e6)}

    def run_once(self, call: Callable[[], Any], reset: Callable[[], None]) -> None:
        reset()
        call()
        self.torch.cuda.synchronize()


class CudaGraphTimer:
    """``cfg.graph`` calls captured in one graph; ``cfg.warmup_calls`` warm-up replays, then
    ``cfg.iters`` timed replays, each behind a GPU sleep."""

    def __init__(self, cfg: Config, barrier: Callable[[], Any], torch):
        self.cfg, self.barrier, self.torch = cfg, barrier, torch

    def _capture(self, call: Callable[[], Any], ops: int):
        cuda = self.torch.cuda
        # Two eager calls first, on a side stream as torch recommends before a capture: they
        # make whatever a first call allocates (e.g. low-precision staging) exist beforehand.
        side = cuda.Stream()
        side.wait_stream(cuda.current_stream())
        with cuda.stream(side):
            call()
            call()
        cuda.current_stream().wait_stream(side)
        cuda.synchronize()
        graph = cuda.CUDAGraph()
        with cuda.graph(graph):
            for _ in range(ops):
                call()
        return graph

    def time(self, call: Callable[[], Any]) -> dict:
        cuda = self.torch.cuda
        graph = self._capture(call, self.cfg.graph)
        for _ in range(self.cfg.warmup_calls):
            graph.replay()
        cuda.synchronize()
        self.barrier()
        times = np.empty(self.cfg.iters)
        for i in range(self.cfg.iters):
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            # The GPU sleeps while the host queues the replay, so the host's graph-launch
            # latency (about 10 us per replay) stays out of the time.
            cuda._sleep(QUEUE_SLEEP_CYCLES)
            start.record()
            graph.replay()
            end.record()
            end.synchronize()
            times[i] = start.elapsed_time(end) * 1e3 / self.cfg.graph
        del graph
        return statistics(times)

    def run_once(self, call: Callable[[], Any], reset: Callable[[], None]) -> None:
        """One replay of a graph holding one call, on freshly reset buffers: the check sees
        what the timed replays ran (captured calls may take other paths than eager ones)."""
        graph = self._capture(call, 1)
        reset()
        graph.replay()
        self.torch.cuda.synchronize()
        del graph


def make_timer(cfg: Config, barrier: Callable[[], Any]):
    if cfg.device != "cuda":
        return HostTimer(cfg, barrier)
    import torch

    return (CudaGraphTimer if cfg.graph else CudaEagerTimer)(cfg, barrier, torch)
