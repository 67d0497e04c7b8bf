"""The GPU code paths of rcclx-perf that can run without a GPU: the CUDA placement's copies,
poison and read-back on torch tensors, and the eager and graph timers' method (what is
captured, replayed, slept behind and divided), against a stand-in for torch.cuda that runs on
the host. The same code on real GPUs is tested by test_perf_gpu.py (marked gpu)."""

from __future__ import annotations

import contextlib
import time
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rcclx_core import Communicator, create_unique_id  # noqa: E402
from rcclx_core.perf import check, runner, timing  # noqa: E402
from rcclx_core.perf.buffers import CudaPlacement, Workspace  # noqa: E402
from rcclx_core.perf.ours import OursColumn  # noqa: E402
from rcclx_core.perf.spec import DTYPES, Config  # noqa: E402


class FakeGraph:
    """Records the ops that the calls under test hand it while it captures; replays them."""

    def __init__(self, cuda):
        self.cuda, self.ops, self.replays = cuda, [], 0

    def replay(self):
        self.replays += 1
        self.cuda.log.append("replay")
        for op in self.ops:
            op()


class FakeCuda:
    """torch.cuda's surface the timers and the placement use, on the host."""

    def __init__(self):
        self.log: list = []
        self.capturing: FakeGraph | None = None

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return (end.t - self.t) * 1e3  # milliseconds, as torch's

    def CUDAGraph(self):
        return FakeGraph(self)

    @contextlib.contextmanager
    def graph(self, g):
        self.capturing = g
        yield
        self.capturing = None

    def synchronize(self, device=None):
        self.log.append("sync")

    def current_stream(self):
        return types.SimpleNamespace(cuda_stream=77, wait_stream=lambda s: None)

    def Stream(self):
        return types.SimpleNamespace(cuda_stream=5, wait_stream=lambda s: None)

    def stream(self, s):
        return contextlib.nullcontext()

    def _sleep(self, cycles):
        self.log.append(("sleep", cycles))


class FakeTorch:
    """torch with its cuda namespace replaced and "cuda" devices mapped to the host."""

    def __init__(self):
        self.cuda = FakeCuda()

    def device(self, kind, index=None):
        return torch.device("cpu")

    def __getattr__(self, name):
        return getattr(torch, name)


def op_that_captures(fake: FakeTorch, op):
    """A call as the timers see it: run now, or recorded while a graph captures."""

    def call():
        if fake.cuda.capturing is not None:
            fake.cuda.capturing.ops.append(op)
        else:
            op()

    return call


@pytest.mark.parametrize("name", list(DTYPES))
def test_cuda_placement_copies_in_poisons_and_reads_back_every_type(name):
    fake = FakeTorch()
    dt = DTYPES[name]
    placement = CudaPlacement(dt, 0, fake)
    inputs = check.send_buffer(Config(collective="all_gather", datatype=name), 2, 1, 37)
    buf = placement.empty(len(inputs))
    assert buf.dtype == getattr(torch, name) and buf.numel() == 37
    placement.write(buf, inputs)
    back = placement.download(buf)
    assert back.dtype == dt.storage and np.array_equal(back.view(np.uint8), inputs.view(np.uint8))
    placement.poison(buf)
    want = check.poison(np.empty(37, dt.storage))
    assert np.array_equal(placement.download(buf).view(np.uint8), want.view(np.uint8))
    assert placement.stream() == {"stream": 77}  # read at call time (graph captures)
    fixed = CudaPlacement(dt, 0, fake, stream_per_call=False)  # eager: read once
    fake.cuda.current_stream = lambda: types.SimpleNamespace(cuda_stream=78)
    assert fixed.stream() == {"stream": 77} and placement.stream() == {"stream": 78}


def test_eager_gpu_timer_times_each_call_between_two_events_and_the_host_call():
    fake = FakeTorch()
    cfg = Config(device="cuda", iters=5, warmup_iters=2)
    calls = []
    stats = timing.CudaEagerTimer(cfg, lambda: calls.append("barrier"), fake).time(
        lambda: (calls.append("op"), time.sleep(0.002))
    )
    # Warm-up: as many calls as the timed loop (what calls in flight allocate exists before it).
    assert calls == [*["op"] * 5, "barrier", *["op"] * 5]
    assert 2000 <= stats["min"] <= stats["median"] <= stats["max"]  # us, each op's events
    assert 2000 <= stats["host"]["min"] and stats["host"]["mean"] <= stats["mean"] + 1
    assert fake.cuda.log == ["sync"]  # once, after the warm-up


def test_eager_gpu_runs_warm_up_with_at_least_the_timed_calls():
    # Eager on a GPU: as many as the timed loop (a staged call allocates its pinned staging the
    # first time that many calls are in flight); graphs and host buffers keep -w.
    assert Config(device="cuda", iters=20, warmup_iters=3).warmup_calls == 20
    assert Config(device="cuda", iters=20, warmup_iters=30).warmup_calls == 30
    assert Config(device="cuda", graph=4, iters=20, warmup_iters=3).warmup_calls == 3
    assert Config(device="cpu", iters=20, warmup_iters=3).warmup_calls == 3


def test_graph_timer_captures_n_ops_and_divides_each_replay_by_n():
    fake = FakeTorch()
    cfg = Config(device="cuda", graph=4, iters=3, warmup_iters=2)
    ran = []
    call = op_that_captures(fake, lambda: (ran.append(1), time.sleep(0.001)))
    timer = timing.CudaGraphTimer(cfg, lambda: fake.cuda.log.append("barrier"), fake)
    stats = timer.time(call)
    # 2 eager calls before the capture, 4 captured, replayed 2 + 3 times
    assert len(ran) == 2 + 4 * (2 + 3)
    sleeps = [e for e in fake.cuda.log if isinstance(e, tuple)]
    assert sleeps == [("sleep", timing.QUEUE_SLEEP_CYCLES)] * 3  # before each timed replay
    timed = fake.cuda.log[fake.cuda.log.index("barrier") :]
    assert timed.count("replay") == 3 and fake.cuda.log.count("replay") == 5
    assert 1000 <= stats["min"] < 4000  # per op: a replay of 4 ops of >= 1 ms, over 4


def test_graph_check_replays_one_captured_call_after_the_reset():
    fake = FakeTorch()
    timer = timing.CudaGraphTimer(Config(device="cuda", graph=20), lambda: None, fake)
    events = []
    call = op_that_captures(fake, lambda: events.append("op"))
    timer.run_once(call, lambda: events.append("reset"))
    # the capture's two eager calls first, then the reset, then the replay of one op
    assert events == ["op", "op", "reset", "op"]


class HostStreamPlacement(CudaPlacement):
    """The CUDA placement on host tensors, for one real rank: host calls take no stream."""

    def stream(self):
        return {}


def test_one_rank_measures_torch_tensor_buffers_with_the_gpu_timer_and_checks_them():
    fake = FakeTorch()
    cfg = Config(collective="all_gather", datatype="bfloat16", device="cuda", iters=3)
    comm = Communicator.from_unique_id(create_unique_id(), 0, 1)
    try:
        placement = HostStreamPlacement(cfg.dtype, 0, fake)
        world = runner.World(0, 1, comm, control=None)
        ws = Workspace(cfg, placement, 1, 0, 100)
        timer = timing.CudaEagerTimer(cfg, comm.barrier, fake)
        column = OursColumn(comm, cfg, placement, "-")
        mine = runner._measure_size(cfg, world, timer, ws, [column], [], warm=True)
        (ours,) = mine["ours"]
        assert ours["wrong"] == 0 and ours["mean"] > 0 and ours["host"]["median"] > 0
        assert isinstance(ws.get(False).recv, torch.Tensor)
    finally:
        comm.destroy()


class RecordingColumn:
    """A column whose call records its name; times come from a list, one per pass."""

    def __init__(self, name, times, log):
        self.name, self.times, self.log = name, list(times), log

    def select(self, nbytes):
        return {"algo": self.name}

    def prepare(self, ws):
        return (lambda: self.log.append(self.name)), types.SimpleNamespace(
            reset=lambda: None, result=lambda: check.send_buffer(ws.cfg, 1, 0, ws.count)
        )


def test_passes_alternate_the_order_keep_each_columns_best_and_check_once():
    log: list = []
    a = RecordingColumn("a", [5.0, 3.0, 4.0, 9.0], log)
    b = RecordingColumn("b", [2.0, 6.0, 1.0, 9.0], log)
    times = {"a": a.times, "b": b.times}

    class Timer:
        def time(self, call):
            call()
            name = log[-1]
            t = times[name].pop(0)
            return {k: t for k in ("mean", "median", "min", "max")}

        def run_once(self, call, reset):
            log.append("check")
            call()

    cfg = Config(collective="broadcast", passes=3, statistic="median")
    ws = Workspace(cfg, None, 1, 0, 8)
    world = runner.World(0, 1, None, control=None)
    mine = runner._measure_size(cfg, world, Timer(), ws, [a], [b], warm=True)
    # a discarded warm pass, then forward, reverse, forward; the check in the first counted pass
    assert log == ["a", "b", "a", "check", "a", "b", "check", "b", "b", "a", "a", "b"]
    assert mine["ours"][0]["median"] == 3.0 and mine["peers"]["b"]["median"] == 1.0
    assert mine["ours"][0]["wrong"] == 0 and mine["peers"]["b"]["wrong"] == 0
