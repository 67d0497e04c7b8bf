"""Soak: a long random mix of collectives on CPU ranks, every result checked, with each rank's
resident memory, open file descriptors and threads sampled after a warm-up and at the end.

    python tests/soak/soak_run.py --ranks 4 --ops 100000 --seed 0

Step i of a run draws its choices from Random(f"{seed}/{i}") alone, so every rank draws the same
calls without talking to the others, and a failing step can be replayed by itself (--first).
A step is one collective (all_reduce with a random operator and algorithm hint, all_gather,
reduce_scatter, broadcast, reduce, all_to_all, all_to_all_v, gather, scatter), a group of
sends and receives, a group of collectives, or a split whose sub-communicator runs a few steps
and is destroyed. Types, sizes (0 to 256 KiB per buffer, log-distributed), in place or not,
and async_op (up to MAX_IN_FLIGHT calls pending) are drawn per call.

Inputs are a function of (rank, call): small integers for reductions (their sums, products,
minima and maxima over four ranks are exact in every type here, and are compared exactly; a
floating AVG is held to rcclx_helpers' rounding bound), hashed bit patterns for data movement
(compared bitwise). Outputs start poisoned, so an element left unwritten shows.

Resources are sampled after the first WARMUP_FRACTION of the steps, once the communicator's
buffers and Python's caches have reached their working size, and at the end, before the
communicator is destroyed (both see the same long-lived resources), no call pending. RSS is
read as it is and again after malloc_trim: the raw figure includes the allocator's free heap,
which rises and falls by several MiB with the sizes of the last calls; the trimmed one is what
a leak would grow, and is the one held to --rss-pct. Open fds and threads must not change.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import gc
import math
import os
import random
import sys
import time
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _path in (_TESTS, _TESTS / "rcclx_core"):  # launcher and checks; rcclx_helpers
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import checks  # noqa: E402
import numpy as np  # noqa: E402
import rcclx_helpers as H  # noqa: E402

from launcher import launch  # noqa: E402

OP = H.OP
SPECS = [H.SPEC[name] for name in ("float32", "float64", "int32", "int64", "bfloat16")]
REDUCTION_OPS = [OP.SUM, OP.MAX, OP.MIN, OP.PROD, OP.AVG]
# The RCCLX_ALLREDUCE_ALGO choices (rcclx_core.perf.spec.allreduce_algos()) and no hint.
# dda_flat, dda_tree and dda_large run only where the ranks can read each other's memory (not
# over tcp): elsewhere the call must be rejected, and the communicator must stay usable after it.
ALLREDUCE_ALGOS = ("auto", "ring", "dda_flat", "dda_tree", "dda_large", None)
DIRECT_ACCESS_ALGOS = frozenset({"dda_flat", "dda_tree", "dda_large"})

# Relative frequency of each kind of step (splits are rare: each creates a communicator).
STEP_WEIGHTS = {
    "all_reduce": 20,
    "all_gather": 8,
    "reduce_scatter": 8,
    "broadcast": 8,
    "reduce": 8,
    "all_to_all": 6,
    "all_to_all_v": 6,
    "gather": 6,
    "scatter": 6,
    "p2p": 8,
    "group": 6,
    "split": 0.3,
}
COLLECTIVES = [k for k in STEP_WEIGHTS if k not in ("p2p", "group", "split")]
MAX_BYTES = 256 * 1024
MAX_IN_FLIGHT = 4
WARMUP_FRACTION = 0.05
TRACE_POINTS = 10  # RSS samples over the run, for the record (the trend of a growth)
# A wait on a peer this long is a hang: the step raises (naming itself) instead of the run
# sitting until the launcher's deadline.
SOAK_ENV = {"RCCLX_TIMEOUT_MS": "60000"}


# --- what a step is --------------------------------------------------------------------


@dataclasses.dataclass
class Call:
    """One collective, or one group of sends and receives (kind "p2p"), as drawn for a
    communicator of a given size. `count` is the elements of the largest buffer; `tag` makes
    the inputs of every call of the run different."""

    kind: str
    spec: H.Spec
    count: int
    tag: int
    op: OP | None = None
    root: int = 0
    algo: str | None = None
    in_place: bool = False
    async_op: bool = False
    in_group: bool = False
    # all_to_all_v: send_counts[s][d] elements go from rank s to rank d; gaps: blocks laid out
    # in reverse peer order with a one-element gap before each (explicit displacements).
    send_counts: list[list[int]] | None = None
    gaps: bool = False
    # p2p: rank r sends each message to r + shift and receives each from r - shift.
    shift: int = 0
    messages: list[int] | None = None
    recv_first: bool = False

    def __str__(self) -> str:
        parts = [self.kind, self.spec.name, f"count={self.count}"]
        if self.op is not None:
            parts.append(self.op.name)
        if self.kind in ("broadcast", "reduce", "gather", "scatter"):
            parts.append(f"root={self.root}")
        if self.kind == "all_reduce":
            parts.append(f"algo={self.algo}")
        if self.send_counts is not None:
            parts.append(f"send_counts={self.send_counts} gaps={self.gaps}")
        if self.messages is not None:
            parts.append(f"shift={self.shift} messages={self.messages}")
        parts.append("in place" if self.in_place else "out of place")
        if self.async_op:
            parts.append("async")
        return " ".join(parts)


@dataclasses.dataclass
class Group:
    """Collectives recorded between group_start and group_end, run together at the end."""

    calls: list[Call]
    async_op: bool

    def __str__(self) -> str:
        return f"group{' async' if self.async_op else ''}[" + "; ".join(map(str, self.calls)) + "]"


@dataclasses.dataclass
class Split:
    """split(color, key) (colors[r] and keys[r] of rank r) or split_ranks(ranks); the members
    then run `steps` steps on the sub-communicator and destroy it."""

    colors: list[int] | None
    keys: list[int] | None
    ranks: list[int] | None
    steps: int

    def members(self, rank: int) -> list[int] | None:
        """The ranks of `rank`'s sub-communicator in sub-rank order; None when it has none."""
        if self.ranks is not None:
            return self.ranks if rank in self.ranks else None
        if self.colors[rank] < 0:
            return None
        same = [r for r in range(len(self.colors)) if self.colors[r] == self.colors[rank]]
        return sorted(same, key=lambda r: (self.keys[r], r))

    def __str__(self) -> str:
        if self.ranks is not None:
            return f"split_ranks({self.ranks}) then {self.steps} steps"
        return f"split(colors={self.colors}, keys={self.keys}) then {self.steps} steps"


def step_rng(seed: int, index: int, sub: int | None = None) -> random.Random:
    return random.Random(f"{seed}/{index}" if sub is None else f"{seed}/{index}/{sub}")


def _count(rng: random.Random, spec: H.Spec, nblocks: int = 1) -> int:
    """Elements of a buffer of 0 to MAX_BYTES bytes, log-distributed, rounded down to a
    multiple of nblocks (one block per rank)."""
    if rng.random() < 0.05:
        return 0
    nbytes = int(2.0 ** rng.uniform(0.0, math.log2(MAX_BYTES)))
    count = nbytes // np.dtype(spec.storage).itemsize
    return count - count % nblocks


def draw_call(rng: random.Random, nranks: int, tag: int, kind: str, in_group: bool) -> Call:
    spec = rng.choice(SPECS)
    blocked = kind in ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")
    call = Call(kind, spec, _count(rng, spec, nranks if blocked else 1), tag)
    if kind in ("all_reduce", "reduce_scatter", "reduce"):
        call.op = rng.choice(REDUCTION_OPS)
    call.root = rng.randrange(nranks)
    if kind == "all_reduce":
        call.algo = rng.choice(ALLREDUCE_ALGOS)
    if kind in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce"):
        call.in_place = rng.random() < 0.5
    if kind == "all_to_all_v":
        most = call.count // max(1, nranks)
        call.send_counts = [[rng.randint(0, most) for _ in range(nranks)] for _ in range(nranks)]
        call.gaps = rng.random() < 0.5
    if kind == "p2p":
        call.shift = rng.randrange(nranks)  # 0: every rank exchanges with itself
        call.messages = [_count(rng, spec) for _ in range(rng.randint(1, 3))]
        call.count = max(call.messages)
        call.recv_first = rng.random() < 0.5
    call.async_op = not in_group and rng.random() < 0.2
    call.in_group = in_group
    return call


def draw_step(rng: random.Random, nranks: int, tag: int, allow_split: bool = True):
    """One step; its calls' tags are tag + j (j < 8), a split's steps tag + 8 * (j + 1)."""
    kinds = [k for k in STEP_WEIGHTS if allow_split or k != "split"]
    kind = rng.choices(kinds, weights=[STEP_WEIGHTS[k] for k in kinds])[0]
    if kind == "group":
        calls = [
            draw_call(rng, nranks, tag + j, rng.choice(COLLECTIVES), in_group=True)
            for j in range(rng.randint(2, 4))
        ]
        return Group(calls, async_op=rng.random() < 0.3)
    if kind == "split":
        steps = rng.randint(2, 5)
        if rng.random() < 0.5:
            colors = [rng.choice((-1, 0, 0, 1)) for _ in range(nranks)]
            keys = rng.sample(range(nranks), nranks)
            return Split(colors, keys, None, steps)
        return Split(None, None, rng.sample(range(nranks), rng.randint(1, nranks)), steps)
    return draw_call(rng, nranks, tag, kind, in_group=False)


# --- inputs -------------------------------------------------------------------------------


def small_ints(spec: H.Spec, rank: int, tag: int, count: int, op) -> np.ndarray:
    """Integers in [-8, 8] ([-2, 2] for PROD), different per rank, call and position."""
    half = 2 if op == OP.PROD else 8
    i = np.arange(count, dtype=np.int64)
    x = (i * 7 + rank * 5 + tag * 3) % (2 * half + 1) - half
    return x.astype(spec.storage) if spec.is_int else H.encode(spec, x.astype(np.float64))


def pattern(spec: H.Spec, rank: int, tag: int, count: int) -> np.ndarray:
    """Hashed bit patterns (NaNs included), different per rank, call and position."""
    i = np.arange(count, dtype=np.uint64) + np.uint64((rank << 58) + (tag << 18))
    with np.errstate(over="ignore"):
        h = (i * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29)
    width = np.dtype(spec.storage).itemsize
    return h.astype(np.dtype(f"u{width}")).view(spec.storage)


def poisoned(spec: H.Spec, count: int) -> np.ndarray:
    return checks.poison(np.empty(count, dtype=spec.storage))


def _layout(counts: list[int], gaps: bool) -> tuple[list[int] | None, int]:
    """Displacements of blocks of `counts` (None: packed in peer order) and the buffer size."""
    if not gaps:
        return None, sum(counts)
    displs, at = [0] * len(counts), 0
    for p in reversed(range(len(counts))):
        displs[p], at = at + 1, at + 1 + counts[p]
    return displs, at


# --- checking -------------------------------------------------------------------------------


class Checker:
    """Counts the outputs checked and the wrong ones, keeping the first few descriptions.
    corrupt_every=k flips one element of every k-th non-empty output before it is checked
    (the test of the soak itself: the wrong results must be counted)."""

    KEPT = 10

    def __init__(self, corrupt_every: int = 0):
        self.checked = 0
        self.wrong = 0
        self.problems: list[str] = []
        self.corrupt_every = corrupt_every

    def _result(self, where: str, problem: str | None) -> None:
        self.checked += 1
        if problem:
            self.wrong += 1
            if len(self.problems) < self.KEPT:
                self.problems.append(f"{where}: {problem}")

    def _maybe_corrupt(self, got: np.ndarray) -> np.ndarray:
        if self.corrupt_every and got.size and self.checked % self.corrupt_every == 0:
            got = got.copy()
            got.view(np.uint8)[got.itemsize - 1] ^= 0x40  # a high bit of the first element
        return got

    def reduction(self, where, spec, op, got, inputs) -> None:
        got = self._maybe_corrupt(got)
        self._result(where, H.check_reduction(spec, op, "int", got, inputs, []))

    def bits(self, where, got, want) -> None:
        self._result(where, checks.same_bits(self._maybe_corrupt(got), want))

    def fact(self, where, ok: bool, problem: str) -> None:
        self._result(where, None if ok else problem)


# --- running a call --------------------------------------------------------------------------


def issue(comm, c: Call):
    """Starts `c` on `comm`; returns (Work or None, verify), verify(checker, where) checking
    the outputs once the call completed."""
    import rcclx_core as rc

    n, me, spec = comm.size, comm.rank, c.spec
    kw = {**spec.kw(), "async_op": c.async_op}
    if c.kind == "all_reduce":
        inputs = [small_ints(spec, p, c.tag, c.count, c.op) for p in range(n)]
        x = inputs[me].copy()
        out = None if c.in_place else poisoned(spec, c.count)
        algo = c.algo
        cannot_run = algo in DIRECT_ACCESS_ALGOS and not comm.direct_access
        if cannot_run and c.in_group:
            algo = None  # a group records only calls that run
        elif cannot_run:
            try:
                comm.all_reduce(x, out, op=c.op, algo=algo, **kw)
                rejected = False
            except rc.InvalidArgumentError:
                rejected = True
            return None, lambda chk, where: chk.fact(
                where, rejected, f"algo={algo} was not rejected on this communicator"
            )
        work = comm.all_reduce(x, out, op=c.op, algo=algo, **kw)

        def verify(chk, where):
            chk.reduction(where, spec, c.op, x if c.in_place else out, inputs)
            if not c.in_place:
                chk.bits(f"{where} (sendbuf)", x, inputs[me])

        return work, verify
    if c.kind == "reduce":
        inputs = [small_ints(spec, p, c.tag, c.count, c.op) for p in range(n)]
        x = inputs[me].copy()
        out = None if c.in_place else poisoned(spec, c.count)
        work = comm.reduce(x, out, root=c.root, op=c.op, **kw)

        def verify(chk, where):
            if me == c.root:
                chk.reduction(where, spec, c.op, x if c.in_place else out, inputs)
            if not c.in_place:
                chk.bits(f"{where} (sendbuf)", x, inputs[me])

        return work, verify
    if c.kind == "reduce_scatter":
        block = c.count // n
        inputs = [small_ints(spec, p, c.tag, c.count, c.op) for p in range(n)]
        mine = slice(me * block, (me + 1) * block)
        x = inputs[me].copy()
        out = x[mine] if c.in_place else poisoned(spec, block)
        work = comm.reduce_scatter(x, out, op=c.op, **kw)
        return work, lambda chk, where: chk.reduction(
            where, spec, c.op, out, [inp[mine] for inp in inputs]
        )
    if c.kind == "all_gather":
        block = c.count // n
        inputs = [pattern(spec, p, c.tag, block) for p in range(n)]
        out = poisoned(spec, n * block)
        if c.in_place:
            send = out[me * block : (me + 1) * block]
            send[:] = inputs[me]
        else:
            send = inputs[me]
        work = comm.all_gather(send, out, **kw)
        return work, lambda chk, where: chk.bits(where, out, np.concatenate(inputs))
    if c.kind == "broadcast":
        want = pattern(spec, c.root, c.tag, c.count)
        if c.in_place:
            out = want.copy() if me == c.root else poisoned(spec, c.count)
            work = comm.broadcast(out, root=c.root, **kw)
        else:
            out = poisoned(spec, c.count)
            work = comm.broadcast(pattern(spec, me, c.tag, c.count), out, root=c.root, **kw)
        return work, lambda chk, where: chk.bits(where, out, want)
    if c.kind == "all_to_all":
        block = c.count // n
        mine = slice(me * block, (me + 1) * block)
        out = poisoned(spec, c.count)
        work = comm.all_to_all(pattern(spec, me, c.tag, c.count), out, **kw)
        want = np.concatenate([pattern(spec, s, c.tag, c.count)[mine] for s in range(n)])
        return work, lambda chk, where: chk.bits(where, out, want)
    if c.kind == "all_to_all_v":
        sends = c.send_counts
        recv_counts = [sends[s][me] for s in range(n)]
        send_displs, send_size = _layout(sends[me], c.gaps)
        recv_displs, recv_size = _layout(recv_counts, c.gaps)
        out = poisoned(spec, recv_size)
        want = out.copy()
        work = comm.all_to_all_v(
            pattern(spec, me, c.tag, send_size),
            out,
            sends[me],
            recv_counts,
            send_displs,
            recv_displs,
            **kw,
        )
        for s in range(n):
            s_displs, s_size = _layout(sends[s], c.gaps)
            s_at = s_displs[me] if c.gaps else sum(sends[s][:me])
            r_at = recv_displs[s] if c.gaps else sum(recv_counts[:s])
            block = pattern(spec, s, c.tag, s_size)[s_at : s_at + recv_counts[s]]
            want[r_at : r_at + recv_counts[s]] = block
        return work, lambda chk, where: chk.bits(where, out, want)
    if c.kind == "gather":
        block = c.count // n
        out = poisoned(spec, c.count) if me == c.root else None
        work = comm.gather(pattern(spec, me, c.tag, block), out, root=c.root, **kw)

        def verify(chk, where):
            if me == c.root:
                want = np.concatenate([pattern(spec, p, c.tag, block) for p in range(n)])
                chk.bits(where, out, want)

        return work, verify
    if c.kind == "scatter":
        block = c.count // n
        send = pattern(spec, c.root, c.tag, c.count)
        out = poisoned(spec, block)
        work = comm.scatter(send if me == c.root else None, out, root=c.root, **kw)
        return work, lambda chk, where: chk.bits(where, out, send[me * block : (me + 1) * block])
    if c.kind == "p2p":
        to, frm = (me + c.shift) % n, (me - c.shift) % n
        sends = [pattern(spec, me, c.tag + k, m) for k, m in enumerate(c.messages)]
        outs = [poisoned(spec, m) for m in c.messages]
        comm.group_start()
        for k in range(len(c.messages)):
            if c.recv_first:
                comm.recv(outs[k], frm, **spec.kw())
                comm.send(sends[k], to, **spec.kw())
            else:
                comm.send(sends[k], to, **spec.kw())
                comm.recv(outs[k], frm, **spec.kw())
        work = comm.group_end(async_op=c.async_op)

        def verify(chk, where):
            for k, m in enumerate(c.messages):
                chk.bits(f"{where} message {k}", outs[k], pattern(spec, frm, c.tag + k, m))

        return work, verify
    raise ValueError(f"unknown call kind {c.kind!r}")


class Runner:
    """Runs steps on one rank, keeping up to MAX_IN_FLIGHT async calls pending."""

    def __init__(self, seed: int, checker: Checker):
        self.seed = seed
        self.checker = checker
        self.pending: list[tuple[object, object, str]] = []
        self.calls = 0

    def flush(self) -> None:
        for work, verify, where in self.pending:
            work.wait()
            verify(self.checker, where)
        self.pending.clear()

    def _checked(self, work, verify, where: str) -> None:
        """Checks now a call that completed (work None), or once `work` has."""
        if work is None:
            verify(self.checker, where)
            return
        self.pending.append((work, verify, where))
        if len(self.pending) >= MAX_IN_FLIGHT:
            self.flush()

    def step(self, comm, index: int, rng: random.Random, tag: int, allow_split=True) -> None:
        """Draws and runs step `index` on `comm` (its inputs tagged from `tag`)."""
        step = draw_step(rng, comm.size, tag, allow_split)
        where = f"step {index} on {comm.size} ranks: {step}"
        try:
            if isinstance(step, Call):
                self._checked(*issue(comm, step), where)
                self.calls += 1
            elif isinstance(step, Group):
                self._group(comm, step, where)
            else:
                self._split(comm, step, index, tag, where)
        except Exception as e:
            raise RuntimeError(f"seed {self.seed} {where}: {type(e).__name__}: {e}") from e

    def _group(self, comm, group: Group, where: str) -> None:
        comm.group_start()
        verifies = [issue(comm, call)[1] for call in group.calls]
        work = comm.group_end(async_op=group.async_op)
        self.calls += len(group.calls)

        def verify(chk, where):
            for j, v in enumerate(verifies):
                v(chk, f"{where} call {j}")

        self._checked(work, verify, where)

    def _split(self, comm, split: Split, index: int, tag: int, where: str) -> None:
        self.flush()
        if split.ranks is not None:
            sub = comm.split_ranks(split.ranks)
        else:
            sub = comm.split(split.colors[comm.rank], key=split.keys[comm.rank])
        self.calls += 1
        members = split.members(comm.rank)
        if members is None:
            self.checker.fact(where, sub is None, f"got {sub!r}, expected None")
            return
        placed = sub is not None and sub.size == len(members) and members[sub.rank] == comm.rank
        self.checker.fact(where, placed, f"sub-communicator {sub!r} is not members {members}")
        if not placed:
            return
        for j in range(split.steps):
            rng = step_rng(self.seed, index, j)
            self.step(sub, index, rng, tag + 8 * (j + 1), allow_split=False)
        self.flush()
        sub.destroy()
        self.calls += 1


# --- a rank ------------------------------------------------------------------------------------

try:
    _LIBC = ctypes.CDLL("libc.so.6")
    _LIBC.malloc_trim  # noqa: B018 - glibc only
except (OSError, AttributeError):
    _LIBC = None


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _status_field(status: str, field: str) -> int:
    """A number from /proc/self/status (sizes there are in KiB)."""
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith(field))


def resources() -> dict:
    """This process's resident memory (KiB) as it is; then, once malloc_trim has returned the
    allocator's free pages to the system, the part a leak would be in: anonymous and shared
    memory (live allocations, fragments that cannot be returned, mapped segments). Pages of
    mapped files are left out of the latter: a path first taken late, as when a wait runs long
    on a loaded machine, pages in a few hundred KiB of library once, and that is no leak. Also
    its open file descriptors and its threads."""
    rss = _rss_kib()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
    with open("/proc/self/status") as f:
        status = f.read()
    threads = _status_field(status, "Threads:")
    return {
        "rss_kib": rss,
        "trimmed_kib": _status_field(status, "RssAnon:") + _status_field(status, "RssShmem:"),
        "fds": len(os.listdir("/proc/self/fd")),
        "threads": threads,
    }


def soak_rank(
    ctx, ops: int, seed: int, first: int = 0, warmup: int | None = None, faults: tuple = ()
) -> dict:
    """Runs steps first .. first + ops - 1 on a communicator of every rank, sampling resources
    after `warmup` steps (default WARMUP_FRACTION of them) and at the end. faults (the test
    of the soak itself): "wrong" corrupts outputs before they are checked, "fd" opens a file
    after the warm-up sample and leaves it open."""
    import rcclx_core as rc

    comm = rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
    checker = Checker(corrupt_every=50 if "wrong" in faults else 0)
    runner = Runner(seed, checker)
    warmup = warmup or max(1, int(ops * WARMUP_FRACTION))
    trace_every = max(1, ops // TRACE_POINTS)
    start = None
    trace = []
    leaked = []
    t0 = time.monotonic()
    for i in range(first, first + ops):
        runner.step(comm, i, step_rng(seed, i), tag=i * 64)
        done = i - first + 1
        traced = start is not None and done % trace_every == 0 and done < ops
        if done == warmup or traced:  # (the end sample is the last)
            runner.flush()  # no call pending: nothing in flight is counted
            gc.collect()
            sample = resources()
            trace.append((done, sample["rss_kib"], sample["trimmed_kib"]))
            if done == warmup:
                start = sample
                if "fd" in faults:
                    leaked.append(open(os.devnull))  # the leak the test must see
    runner.flush()
    seconds = time.monotonic() - t0
    gc.collect()
    end = resources()
    # Rank 0 hosts the store the others joined through: a rank that destroyed its
    # communicator has left it (a server thread ends), which rank 0 must not see as its own.
    comm.barrier()
    comm.destroy()
    return {
        "seconds": seconds,
        "calls": runner.calls,
        "checked": checker.checked,
        "wrong": checker.wrong,
        "problems": checker.problems,
        "warmup": warmup,
        "start": start,
        "end": end,
        "trace": trace,
    }


# --- the run --------------------------------------------------------------------------------------

# The RSS a leak shows in: the raw figure also moves by several MiB either way with the
# allocator's free heap (what malloc_trim returns), from one sample to the next.
CHECKED_RSS = ("trimmed_kib",)


@dataclasses.dataclass
class SoakReport:
    nranks: int
    ops: int
    seed: int
    ranks: list[dict]  # soak_rank's result, per rank

    @property
    def seconds(self) -> float:
        return max(r["seconds"] for r in self.ranks)

    @property
    def wrong(self) -> int:
        return sum(r["wrong"] for r in self.ranks)

    @property
    def checked(self) -> int:
        return sum(r["checked"] for r in self.ranks)

    def delta(self, rank: int, what: str) -> int:
        """End sample minus warm-up sample of `what` (a key of resources())."""
        r = self.ranks[rank]
        return r["end"][what] - r["start"][what]

    def growth_pct(self, rank: int, kind: str = "rss_kib") -> float:
        return 100.0 * self.delta(rank, kind) / self.ranks[rank]["start"][kind]

    def failures(
        self, rss_pct: float = 5.0, rss_slack_kib: int = 0, rss_kinds=CHECKED_RSS
    ) -> list[str]:
        """What is out of bounds: wrong results, RSS growth (of each of rss_kinds) past
        rss_pct of the warm-up sample plus rss_slack_kib, any change in open fds or threads."""
        found = []
        if self.wrong:
            found.append(f"{self.wrong} wrong results: " + " | ".join(self.problems()))
        for rank, r in enumerate(self.ranks):
            for kind in rss_kinds:
                grown = self.delta(rank, kind)
                if grown > r["start"][kind] * rss_pct / 100 + rss_slack_kib:
                    pct = self.growth_pct(rank, kind)
                    found.append(f"rank {rank}: {kind} grew {grown} KiB ({pct:+.1f}%)")
            if self.delta(rank, "fds"):
                found.append(f"rank {rank}: open fds changed by {self.delta(rank, 'fds'):+d}")
            if self.delta(rank, "threads"):
                found.append(f"rank {rank}: threads changed by {self.delta(rank, 'threads'):+d}")
        return found

    def problems(self) -> list[str]:
        return [f"rank {k}: {p}" for k, r in enumerate(self.ranks) for p in r["problems"]]

    def lines(self) -> list[str]:
        calls = sum(r["calls"] for r in self.ranks) // self.nranks
        out = [
            f"soak: {self.nranks} ranks, {self.ops} steps ({calls} calls per rank), seed "
            f"{self.seed}, {self.seconds:.1f} s: {self.ops / self.seconds:.0f} steps/s, "
            f"{calls / self.seconds:.0f} calls/s",
            f"results checked: {self.checked}, wrong: {self.wrong}",
            f"resources after step {self.ranks[0]['warmup']} (warm-up) and at the end "
            "(RSS in KiB; trimmed: after malloc_trim):",
            "rank  RSS start    end  growth  trimmed start    end  growth  fds     threads",
        ]
        for k, r in enumerate(self.ranks):
            s, e = r["start"], r["end"]
            out.append(
                f"{k:>4}  {s['rss_kib']:>9} {e['rss_kib']:>6} {self.growth_pct(k):>+6.1f}%"
                f"  {s['trimmed_kib']:>13} {e['trimmed_kib']:>6}"
                f" {self.growth_pct(k, 'trimmed_kib'):>+6.1f}%"
                f"  {s['fds']:>2} {self.delta(k, 'fds'):+d}  {s['threads']:>3} "
                f"{self.delta(k, 'threads'):+d}"
            )
        out.append("RSS / trimmed KiB after N steps:")
        for k, r in enumerate(self.ranks):
            trace = ", ".join(f"{done}: {raw}/{trim}" for done, raw, trim in r["trace"])
            out.append(f"  rank {k}: {trace}")
        out += self.problems()
        return out


def run_soak(
    nranks: int,
    ops: int,
    seed: int = 0,
    first: int = 0,
    warmup: int | None = None,
    timeout: float = 3600.0,
    env: dict | None = None,
    faults: tuple = (),
) -> SoakReport:
    results = launch(
        soak_rank, nranks, ops, seed, first, warmup, faults, env={**SOAK_ENV, **(env or {})},
        timeout=timeout,
    )  # fmt: skip
    return SoakReport(nranks, ops, seed, [r.value for r in results])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--ops", type=int, default=100000, help="steps to run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--first", type=int, default=0, help="index of the first step")
    parser.add_argument("--warmup", type=int, help="steps before the first sample (default 5%%)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds for the run")
    parser.add_argument("--transport", choices=("auto", "shm", "tcp"), default="auto")
    parser.add_argument("--rss-pct", type=float, default=5.0, help="trimmed RSS growth allowed")
    args = parser.parse_args(argv)
    report = run_soak(
        args.ranks, args.ops, args.seed, args.first, args.warmup, args.timeout,
        env={"RCCLX_TRANSPORT": args.transport},
    )  # fmt: skip
    print(f"command: python tests/soak/soak_run.py {' '.join(argv or sys.argv[1:])}")
    print("\n".join(report.lines()))
    failures = report.failures(rss_pct=args.rss_pct)
    print("FAILED: " + "; ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
