"""One process driving two GPUs: one communicator per GPU (rank r on cuda:r), created
concurrently by one thread per rank from one unique id or one store, then, from each rank's
thread, all_reduce with every GPU algorithm, all_gather, reduce_scatter, all_to_all, broadcast
and send / recv on torch CUDA tensors, on a side stream and on the legacy default stream,
compared exactly with references (inputs are small integers, so every type sums exactly), and
an all_reduce in the FP8 wire format (within its error bound); the same collectives enqueued for
both GPUs by a single thread whose current device is the other GPU (each call makes its
communicator's GPU current and gives the caller's back); device memory returned after destroy;
two ranks of one process on one GPU refused with a clear error; a captured all_reduce whose
ordinary output is mapped at capture (graph registration) from both threads at once. Peers of
one process reach each other's memory by pointer with peer access (no CUDA IPC). Every test but
the refusal needs 2 GPUs and skips with fewer.
"""

from __future__ import annotations

import threading
import time

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
from gpu_cases import require_gpus_per_rank  # noqa: E402

import ctran  # noqa: E402
import rcclx_core as rc  # noqa: E402
from launcher import run_threads  # noqa: E402

pytestmark = pytest.mark.gpu

N = 2  # ranks, one per GPU, all in this process
ALGOS = ("dda_flat", "dda_tree", "dda_large")
COUNTS = (1, 1001, 65537, 1_000_003)
DTYPES = (torch.float32, torch.bfloat16, torch.int32)
OPS = {
    "SUM": rc.RedOp.SUM,
    "MAX": rc.RedOp.MAX,
    "MIN": rc.RedOp.MIN,
    "PROD": rc.RedOp.PROD,
}


def _input(rank: int, count: int, dtype, salt: int):
    """Rank `rank`'s input, on the host: integers in [-8, 8] (sums and products of two stay
    exact in bfloat16), the same in every thread."""
    g = torch.Generator().manual_seed(1_000_003 * salt + 7919 * rank + count)
    return torch.randint(-8, 9, (count,), generator=g, dtype=torch.int64).to(dtype)


def _reduce(xs, op: str):
    """The exact reduction, in the inputs' type (their sums and products stay exact)."""
    return checks.reduce_in_float64(xs, op).to(xs[0].dtype)


@pytest.fixture(scope="module")
def two_gpus():
    """One GPU per rank, all driven from this process."""
    require_gpus_per_rank(N)


def _create(nranks, make):
    """Communicators created concurrently, one thread per rank (creation is collective)."""

    def rank_main(r):
        torch.cuda.set_device(r)
        comm = make(r)
        assert (comm.rank, comm.size, comm.device, comm.local_size) == (r, nranks, r, nranks)
        assert torch.cuda.current_device() == r, "creation changed the caller's device"
        return comm

    return run_threads(rank_main, nranks, timeout=120)


def _destroy(comms):
    """destroy is collective: one thread per rank."""
    run_threads(lambda r: comms[r].destroy(), len(comms), timeout=60)


class _RankRunner:
    """Runs one rank's cases from its thread and collects the problems found."""

    def __init__(self, comm, barrier, stream):
        self.comm, self.barrier, self.stream = comm, barrier, stream
        self.me, self.dev = comm.rank, torch.device("cuda", comm.rank)
        self.problems: list[str] = []

    def run(self, what, launch, outputs_and_refs, use_stream=True):
        """launch(stream) enqueues the call; then each (out, want[, atol]) is compared."""
        torch.cuda.synchronize(self.dev)  # inputs and poisoned outputs are in place
        self.barrier.wait()  # every rank's buffers exist before a kernel waits on its peers
        launch(self.stream.cuda_stream if use_stream else None)
        if torch.cuda.current_device() != self.me:
            self.problems.append(f"{what}: the caller's current device became cuda:{self.me}")
            torch.cuda.set_device(self.me)
        torch.cuda.synchronize(self.dev)
        for out, want, *atol in outputs_and_refs:
            diff = checks.same_values(out, want, *atol)
            if diff:
                self.problems.append(f"{what}: {diff}")


def _all_reduce_cases(t: _RankRunner):
    comm, me, dev = t.comm, t.me, t.dev
    salt = 0
    for algo in ALGOS:
        for dtype in DTYPES:
            for ci, count in enumerate(COUNTS):
                op = list(OPS)[(ci + ALGOS.index(algo)) % len(OPS)]
                salt += 1
                xs = [_input(r, count, dtype, salt) for r in range(N)]
                x = xs[me].to(dev)
                out = checks.poison(torch.empty_like(x))
                use_stream = ci % 2 == 0  # odd cases on the legacy default stream

                def launch(s, x=x, out=out, op=op, algo=algo):
                    comm.all_reduce(x, out, op=OPS[op], algo=algo, stream=s)

                name = f"all_reduce {algo} {dtype} {op} count={count}"
                t.run(name, launch, [(out, _reduce(xs, op))], use_stream)


def _data_movement_cases(t: _RankRunner):
    comm, me, dev = t.comm, t.me, t.dev
    salt = 1000
    for dtype in (torch.bfloat16, torch.int32):
        for count in (1, 4099, 1_000_003):
            salt += 1
            xs = [_input(r, count, dtype, salt) for r in range(N)]
            x = xs[me].to(dev)
            out = checks.poison(torch.empty(N * count, dtype=dtype, device=dev))
            t.run(
                f"all_gather {dtype} count={count}",
                lambda s, x=x, out=out: comm.all_gather(x, out, stream=s),
                [(out, torch.cat(xs))],
            )

            ys = [_input(r, N * count, dtype, salt + 1000) for r in range(N)]
            y = ys[me].to(dev)
            rs = checks.poison(torch.empty(count, dtype=dtype, device=dev))
            want_rs = _reduce([v[me * count : (me + 1) * count] for v in ys], "SUM")
            t.run(
                f"reduce_scatter {dtype} count={count}",
                lambda s, y=y, rs=rs: comm.reduce_scatter(y, rs, op=rc.RedOp.SUM, stream=s),
                [(rs, want_rs)],
            )

            a2a = checks.poison(torch.empty_like(y))
            want_a2a = torch.cat([v[me * count : (me + 1) * count] for v in ys])
            t.run(
                f"all_to_all {dtype} count={count}",
                lambda s, y=y, a2a=a2a: comm.all_to_all(y, a2a, stream=s),
                [(a2a, want_a2a)],
            )

            for root in range(N):
                b = xs[me].to(dev) if me == root else checks.poison(torch.empty_like(x))
                t.run(
                    f"broadcast {dtype} count={count} root={root}",
                    lambda s, b=b, root=root: comm.broadcast(b, root=root, stream=s),
                    [(b, xs[root])],
                )

            right, left = (me + 1) % N, (me - 1) % N
            got = checks.poison(torch.empty_like(x))

            def ring(s, x=x, got=got, right=right, left=left):
                comm.group_start()
                comm.send(x, right, stream=s)
                comm.recv(got, left, stream=s)
                comm.group_end()

            t.run(f"send/recv ring {dtype} count={count}", ring, [(got, xs[left])])


def _low_precision_cases(t: _RankRunner):
    """The FP8 wire format: its staging is allocated (collectively) by the first such call."""
    comm, me, dev = t.comm, t.me, t.dev
    for salt, count in enumerate((4099, 1_000_003), start=2000):
        xs = [_input(r, count, torch.float32, salt) for r in range(N)]
        x = xs[me].to(dev)
        out = checks.poison(torch.empty_like(x))
        t.run(
            f"all_reduce low_precision float32 count={count}",
            lambda s, x=x, out=out: comm.all_reduce(x, out, low_precision=True, stream=s),
            [(out, _reduce(xs, "SUM"), 2.0)],  # e4m3 of |x| <= 16: within 1/8 of the block max
        )


def _rank_cases(comm, barrier, stream):
    """Every collective from this rank's thread; returns the problems found."""
    t = _RankRunner(comm, barrier, stream)
    _all_reduce_cases(t)
    _data_movement_cases(t)
    _low_precision_cases(t)
    return t.problems


@pytest.fixture(scope="module")
def comms(two_gpus):
    torch.cuda.init()
    uid = rc.create_unique_id()
    made = _create(N, lambda r: rc.Communicator.from_unique_id(uid, r, N, device=r))
    yield made
    if not any(c.destroyed for c in made):
        _destroy(made)


def test_every_collective_from_each_ranks_thread(comms):
    barrier = threading.Barrier(N)

    def rank_main(r):
        torch.cuda.set_device(r)
        return _rank_cases(comms[r], barrier, torch.cuda.Stream(device=r))

    problems = [p for r, ps in enumerate(run_threads(rank_main, N, timeout=280)) for p in ps]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])


def test_one_thread_enqueues_for_both_gpus(comms):
    """Device calls return at once, so one thread can enqueue every rank's half of a
    collective; each call makes its communicator's GPU current and restores the caller's."""
    streams = [torch.cuda.Stream(device=r) for r in range(N)]
    problems = []
    for caller_device in range(N):
        torch.cuda.set_device(caller_device)
        for ci, (algo, count) in enumerate([(a, c) for a in ALGOS for c in (1001, 1_000_003)]):
            xs = [_input(r, count, torch.float32, 100 + ci) for r in range(N)]
            ins = [xs[r].to(f"cuda:{r}") for r in range(N)]
            outs = [checks.poison(torch.empty_like(ins[r])) for r in range(N)]
            gots = [checks.poison(torch.empty_like(ins[r])) for r in range(N)]
            for r in range(N):
                torch.cuda.synchronize(r)
            for r in range(N):
                s = streams[r].cuda_stream
                comms[r].all_reduce(ins[r], outs[r], algo=algo, stream=s)
                comms[r].group_start()
                comms[r].send(ins[r], (r + 1) % N, stream=s)
                comms[r].recv(gots[r], (r - 1) % N, stream=s)
                comms[r].group_end()
                if torch.cuda.current_device() != caller_device:
                    problems.append(
                        f"rank {r}'s calls left cuda:{torch.cuda.current_device()} current, "
                        f"not the caller's cuda:{caller_device}"
                    )
                    torch.cuda.set_device(caller_device)
            for r in range(N):
                streams[r].synchronize()
                for what, out, want in (
                    (f"all_reduce {algo}", outs[r], _reduce(xs, "SUM")),
                    ("send/recv", gots[r], xs[(r - 1) % N]),
                ):
                    diff = checks.same_values(out, want)
                    if diff:
                        problems.append(
                            f"caller on cuda:{caller_device}, rank {r}: {what} {count}: {diff}"
                        )
    assert not problems, "\n".join(problems[:30])


def test_created_from_one_store_and_memory_returned(two_gpus):
    """Warm-up pair (enables peer access), then a pair from one store whose creation, use and
    destroy leave each GPU's free memory where it was."""
    torch.cuda.init()
    uid = rc.create_unique_id()
    _destroy(_create(N, lambda r: rc.Communicator.from_unique_id(uid, r, N, device=r)))
    torch.cuda.empty_cache()
    free_before = [torch.cuda.mem_get_info(r)[0] for r in range(N)]
    store = ctran.MemoryStore()
    made = _create(
        N, lambda r: rc.Communicator.from_store(store, r, N, prefix="one-process", device=r)
    )

    def use(r):
        torch.cuda.set_device(r)
        x = torch.full((4097,), r + 1, dtype=torch.float32, device=f"cuda:{r}")
        made[r].all_reduce(x)
        y = torch.empty(N * 4097, dtype=torch.float32, device=f"cuda:{r}")
        made[r].all_gather(x, y)
        torch.cuda.synchronize(r)
        return x.cpu(), y.cpu()

    for x, y in run_threads(use, N, timeout=60):
        assert torch.equal(x, torch.full((4097,), N * (N + 1) / 2))
        assert torch.equal(y, torch.full((N * 4097,), N * (N + 1) / 2))
    _destroy(made)
    torch.cuda.empty_cache()
    lost = [free_before[r] - torch.cuda.mem_get_info(r)[0] for r in range(N)]
    assert all(abs(d) < (4 << 20) for d in lost), f"device bytes not returned, by GPU: {lost}"


def test_two_ranks_on_one_gpu_are_refused():
    uid = rc.create_unique_id()

    def rank_main(r):
        torch.cuda.set_device(0)
        try:
            rc.Communicator.from_unique_id(uid, r, N, device=0)
        except rc.Error as e:
            return str(e)
        return None

    messages = run_threads(rank_main, N, timeout=60)
    for r, msg in enumerate(messages):
        assert msg is not None, f"rank {r}: a second rank on GPU 0 of this process was accepted"
        assert "one GPU per rank" in msg, msg


def test_captured_all_reduce_maps_outputs_of_threads_of_one_process(two_gpus):
    """Each rank's thread captures an 8 MiB dda_tree all_reduce on an ordinary tensor (thread-
    local capture, both at once): the outputs are mapped at capture (peers of one process by
    pointer), replays on new inputs are exact, and the mappings go with the graph."""
    uid = rc.create_unique_id()
    comms = _create(N, lambda r: rc.Communicator.from_unique_id(uid, r, N, device=r))
    count = 4 << 20  # bfloat16: 8 MiB, dda_tree's zero-copy size

    def rank_main(r):
        torch.cuda.set_device(r)
        comm, dev = comms[r], torch.device("cuda", r)
        x = torch.ones(count, dtype=torch.bfloat16, device=dev)
        out = torch.empty_like(x)
        side = torch.cuda.Stream(dev)
        with torch.cuda.stream(side):  # eager warm-up
            comm.all_reduce(x, out, algo="dda_tree", stream=side.cuda_stream)
        torch.cuda.synchronize(dev)
        g = torch.cuda.CUDAGraph()
        before = rc._testing.symmetric_calls(comm)
        with torch.cuda.graph(g, stream=side, capture_error_mode="thread_local"):
            comm.all_reduce(x, out, algo="dda_tree", stream=side.cuda_stream)
        counted, held = (
            rc._testing.symmetric_calls(comm) - before,
            rc._testing.graph_registrations(comm),
        )
        problems = []
        for rep in range(3):
            x.copy_(_input(r, count, torch.bfloat16, 500 + rep).to(dev))
            checks.poison(out)
            torch.cuda.synchronize(dev)
            g.replay()
            torch.cuda.synchronize(dev)
            want = _reduce([_input(q, count, torch.bfloat16, 500 + rep) for q in range(N)], "SUM")
            diff = checks.same_values(out, want)
            if diff:
                problems.append(f"replay {rep}: {diff}")
        del g
        torch.cuda.synchronize(dev)
        deadline = time.monotonic() + 10
        while rc._testing.graph_registrations(comm) and time.monotonic() < deadline:
            time.sleep(0.05)
        return counted, held, problems, rc._testing.graph_registrations(comm)

    results = run_threads(rank_main, N, timeout=120)
    _destroy(comms)
    for r, (counted, held, problems, left) in enumerate(results):
        assert not problems, f"rank {r}: {problems}"
        assert (counted, held, left) == (1, 1, 0), f"rank {r}: zero-copy calls, held, left"
