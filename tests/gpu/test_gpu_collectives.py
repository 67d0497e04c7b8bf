"""Every collective but all_reduce on GPU buffers, 2 ranks (sharing a GPU where the machine has
one): all_gather(_v), reduce_scatter(_v), all_to_all(_v), broadcast, reduce, gather, scatter,
send / recv (grouped, chained, several to one peer, to self) and the device barrier; the
reductions with every operator (PREMUL_SUM with a scalar per rank, BAND / BOR / BXOR on
integers of every width), odd counts, misaligned views, in place, messages of several rounds;
one CUDA graph of all of them replayed on changing inputs; a send whose receiver never comes
fails within the timeout; clear errors for mixed buffers and what GPU reductions refuse; the
results equal torch.distributed's (NCCL) bit for bit in the same processes.

Outputs are poisoned first and compared bitwise with a torch reference that reduces the way the
kernels promise (checks.reduce_in_rank_order); outputs that are the same on every rank
(all_gather, broadcast) are also compared across ranks by digest.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import checks  # noqa: E402
from gpu_cases import (  # noqa: E402
    BITWISE,
    STALL_TIMEOUT_MS,
    Cases,
    assert_stalled_error,
    current_stream,
    invalid_argument_problem,
    make_input,
    premul_scalar,
    rank_device,
    require_gpus_per_rank,
    scaled_inputs,
    stalled_call,
)

import rcclx_core as rc  # noqa: E402
from launcher import launch  # noqa: E402

pytestmark = pytest.mark.gpu

NRANKS = 2
COUNTS = (0, 1, 3, 1001, 65537)
ROUNDS_COUNT = 3_000_001  # 12 MB fp32 blocks: several rounds through the staging
COPY_TYPES = ("bfloat16", "float32", "int8", "float64")
REDUCE_TYPE_OPS = [
    ("bfloat16", ("SUM", "MAX", "AVG", "PREMUL_SUM")),
    ("float16", ("SUM", "MIN")),
    ("float32", ("SUM", "PROD", "AVG", "PREMUL_SUM")),
    ("float64", ("SUM",)),
    ("int32", ("SUM", "MAX", "AVG", "BAND")),
    ("int8", ("SUM", "BXOR")),
    ("uint8", ("MAX",) + BITWISE),
    ("int64", ("MIN",) + BITWISE),
]
# What the multi-round family runs at ROUNDS_COUNT (the slow sweep runs every type and op there).
ROUND_COPY_TYPES = ("bfloat16", "int8")
ROUND_TYPE_OPS = [("bfloat16", ("SUM",)), ("float32", ("PREMUL_SUM",)), ("int64", ("BXOR",))]


def reduced(xs, op):
    """The reduction of xs (every rank's input) as the kernels compute it."""
    return checks.reduce_in_rank_order(scaled_inputs(xs, op), op)


class CollectiveCases(Cases):
    """A rank's cases of one family, with every rank's seeded inputs at hand."""

    def __init__(self, ctx, comm, dev):
        super().__init__()
        self.comm, self.dev = comm, dev
        self.n, self.me = ctx.nranks, ctx.rank
        self.seed = 0

    def inputs(self, name, count, op="SUM"):
        """Every rank's input of a new case (this rank's at [me])."""
        self.seed += 1
        dt = getattr(torch, name)
        return [make_input(dt, count, op, self.seed, r, self.dev) for r in range(self.n)]

    def empty(self, dtype, count, misaligned=False):
        """A poisoned output (misaligned: one element into its allocation)."""
        t = torch.empty(count + int(misaligned), dtype=dtype, device=self.dev)
        return checks.poison(t[1:] if misaligned else t)

    def scalar(self, op):
        """This rank's PREMUL_SUM scalar as a keyword argument (none for other operators)."""
        return {"scalar": premul_scalar(self.me)} if op == "PREMUL_SUM" else {}


# --- data movement ---------------------------------------------------------------------------


def data_movement(c: CollectiveCases, counts, types=COPY_TYPES):
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    for name in types:
        dt = getattr(torch, name)
        for count in counts:
            xs = c.inputs(name, count)
            per = count // n  # all_to_all and scatter: n blocks of count // n (the rest unused)

            def ag(xs=xs, dt=dt, count=count):
                out = c.empty(dt, n * count)
                comm.all_gather(xs[me], out, stream=s())
                return out, torch.cat(xs)

            def a2a(xs=xs, dt=dt, per=per):
                out = c.empty(dt, n * per)
                comm.all_to_all(xs[me][: n * per], out, stream=s())
                return out, torch.cat([xs[p][me * per : (me + 1) * per] for p in range(n)])

            def ga(xs=xs, dt=dt, count=count, root=n - 1):
                out = c.empty(dt, n * count) if me == root else None
                comm.gather(xs[me], out, root=root, stream=s())
                return (out, torch.cat(xs)) if me == root else (None, None)

            def sc(xs=xs, dt=dt, per=per, root=0):
                out = c.empty(dt, per)
                send = xs[me][: n * per] if me == root else None
                comm.scatter(send, out, root=root, stream=s())
                return out, xs[root][me * per : (me + 1) * per]

            c.run(f"all_gather {name} n={count}", ag, same_on_all_ranks=True)
            c.run(f"all_to_all {name} n={count}", a2a)
            for root in range(n):

                def bc(xs=xs, dt=dt, count=count, root=root):
                    out = c.empty(dt, count)
                    comm.broadcast(xs[me], out, root=root, stream=s())
                    return out, xs[root]

                c.run(f"broadcast root={root} {name} n={count}", bc, same_on_all_ranks=True)
            c.run(f"gather root={n - 1} {name} n={count}", ga)
            c.run(f"scatter root=0 {name} n={count}", sc)


def v_variants(c: CollectiveCases):
    """Every rank a different count, odd ones, so blocks land misaligned."""
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    for name in ("bfloat16", "int8"):
        dt = getattr(torch, name)
        for base in (1, 4097, 1_500_001):
            counts_v = [base + 3 * r for r in range(n)]
            c.seed += 1
            xs = [make_input(dt, counts_v[r], "SUM", c.seed, r, c.dev) for r in range(n)]

            def agv(xs=xs, dt=dt, counts_v=counts_v):
                out = c.empty(dt, sum(counts_v))
                comm.all_gather_v(xs[me], out, counts_v, stream=s())
                return out, torch.cat(xs)

            def cnt(src, dst, base=base):  # what rank src sends to rank dst
                return base + src + 2 * dst

            def a2av(dt=dt, cnt=cnt, seed=c.seed + 7):
                total = [sum(cnt(src, d) for d in range(n)) for src in range(n)]
                sends = [make_input(dt, total[src], "SUM", seed, src, c.dev) for src in range(n)]
                out = c.empty(dt, sum(cnt(src, me) for src in range(n)))
                send_counts = [cnt(me, d) for d in range(n)]
                recv_counts = [cnt(src, me) for src in range(n)]
                comm.all_to_all_v(sends[me], out, send_counts, recv_counts, stream=s())
                parts = []
                for src in range(n):
                    off = sum(cnt(src, d) for d in range(me))
                    parts.append(sends[src][off : off + cnt(src, me)])
                return out, torch.cat(parts)

            c.run(f"all_gather_v {name} counts={counts_v}", agv, same_on_all_ranks=True)
            c.run(f"all_to_all_v {name} base={base}", a2av)
    for name, op in (
        ("bfloat16", "SUM"),
        ("float32", "SUM"),
        ("int32", "SUM"),
        ("float32", "PREMUL_SUM"),
        ("int64", "BXOR"),
    ):
        rop = getattr(rc.RedOp, op)
        for base in (5, 1_000_003):
            counts_v = [base + 2 * r for r in range(n)]
            xs = c.inputs(name, sum(counts_v), op)

            def rsv(xs=xs, counts_v=counts_v, op=op, rop=rop):
                out = c.empty(xs[0].dtype, counts_v[me])
                comm.reduce_scatter_v(xs[me], out, counts_v, op=rop, stream=s(), **c.scalar(op))
                off = sum(counts_v[:me])
                return out, reduced([x[off : off + counts_v[me]] for x in xs], op)

            c.run(f"reduce_scatter_v {name} {op} counts={counts_v}", rsv)


def in_place_and_misaligned_copies(c: CollectiveCases):
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    count = 70001
    for name in ("bfloat16", "float32"):
        dt = getattr(torch, name)
        xs = c.inputs(name, count)

        def ag_inplace(xs=xs, dt=dt):
            out = c.empty(dt, n * count)
            mine = out[me * count : (me + 1) * count]
            mine.copy_(xs[me])
            comm.all_gather(mine, out, stream=s())
            return out, torch.cat(xs)

        def ag_misaligned(xs=xs, dt=dt):
            src = c.empty(dt, count, misaligned=True)
            src.copy_(xs[me])
            out = c.empty(dt, n * count, misaligned=True)
            comm.all_gather(src, out, stream=s())
            return out, torch.cat(xs)

        def bc_inplace(xs=xs):
            buf = xs[me].clone()
            comm.broadcast(buf, root=1 % n, stream=s())
            return buf, xs[1 % n]

        def a2a_inplace(xs=xs):
            # as NCCL's ncclAlltoAll with sendbuff == recvbuff: the input is copied aside first
            k = count // n
            buf = xs[me][: n * k].clone()
            comm.all_to_all(buf, buf, stream=s())
            return buf, torch.cat([xs[p][me * k : (me + 1) * k] for p in range(n)])

        c.run(f"all_gather {name} n={count} in place", ag_inplace, same_on_all_ranks=True)
        c.run(f"all_to_all {name} n={count} in place", a2a_inplace)
        c.run(f"all_gather {name} n={count} misaligned", ag_misaligned, same_on_all_ranks=True)
        c.run(f"broadcast {name} n={count} in place", bc_inplace, same_on_all_ranks=True)


# --- reductions ------------------------------------------------------------------------------


def reduce_scatters(c: CollectiveCases, counts, type_ops=REDUCE_TYPE_OPS):
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    for name, ops in type_ops:
        for op in ops:
            rop = getattr(rc.RedOp, op)
            for count in [k for k in counts if k]:
                xs = c.inputs(name, n * count, op)

                def rs(xs=xs, count=count, op=op, rop=rop):
                    out = c.empty(xs[0].dtype, count)
                    comm.reduce_scatter(xs[me], out, op=rop, stream=s(), **c.scalar(op))
                    return out, reduced([x[me * count : (me + 1) * count] for x in xs], op)

                c.run(f"reduce_scatter {name} {op} n={count}", rs)


def reduces(c: CollectiveCases, counts, type_ops=REDUCE_TYPE_OPS):
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    for name, ops in type_ops:
        for op in ops:
            rop = getattr(rc.RedOp, op)
            for count in [k for k in counts if k]:
                xs = c.inputs(name, n * count, op)
                root = count % n

                def rd(xs=xs, op=op, rop=rop, root=root):
                    out = c.empty(xs[0].dtype, xs[0].numel()) if me == root else None
                    comm.reduce(xs[me], out, root=root, op=rop, stream=s(), **c.scalar(op))
                    return (out, reduced(xs, op)) if me == root else (None, None)

                c.run(f"reduce root={root} {name} {op} n={n * count}", rd)


def in_place_and_misaligned_reductions(c: CollectiveCases):
    """In place, and views off 16-byte alignment (the element-wise path): 2 bytes (bf16), 8
    (int64) and 1 (uint8), for reduce_scatter and for reduce (whose non-roots send the view)."""
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    m = 4099
    xs = c.inputs("bfloat16", n * m + 1)

    def rs_inplace():
        buf = xs[me][: n * m].clone()
        out = buf[me * m : (me + 1) * m]
        comm.reduce_scatter(buf, out, stream=s())
        return out, reduced([x[me * m : (me + 1) * m] for x in xs], "SUM")

    c.run(f"reduce_scatter bfloat16 n={m} in place", rs_inplace)
    for name, op in [("bfloat16", "SUM"), ("bfloat16", "PREMUL_SUM")] + [
        ("int64", "BAND"),
        ("uint8", "BXOR"),
    ]:
        rop = getattr(rc.RedOp, op)
        xs = c.inputs(name, n * m + 1, op)

        def rs_mis(xs=xs, op=op, rop=rop):
            out = c.empty(xs[0].dtype, m, misaligned=True)
            comm.reduce_scatter(xs[me][1:], out, op=rop, stream=s(), **c.scalar(op))
            return out, reduced([x[1 + me * m : 1 + (me + 1) * m] for x in xs], op)

        def rd_mis(xs=xs, op=op, rop=rop, root=n - 1):
            out = c.empty(xs[0].dtype, n * m, misaligned=True) if me == root else None
            comm.reduce(xs[me][1:], out, root=root, op=rop, stream=s(), **c.scalar(op))
            return (out, reduced([x[1:] for x in xs], op)) if me == root else (None, None)

        c.run(f"reduce_scatter {name} {op} n={m} misaligned", rs_mis)
        if op != "SUM":
            c.run(f"reduce root={n - 1} {name} {op} n={n * m} misaligned", rd_mis)


# --- point to point and barrier --------------------------------------------------------------


def point_to_point(c: CollectiveCases, counts, with_others=True):
    """A ring and a chain at `counts`; with_others: also several messages to one peer and to
    self in a group, and the device barrier."""
    comm, n, me, s = c.comm, c.n, c.me, current_stream
    nxt, prv = (me + 1) % n, (me - 1) % n
    for count in counts:
        xs = c.inputs("float32", count)

        def ring(xs=xs, count=count):
            out = c.empty(torch.float32, count)
            comm.group_start()
            comm.send(xs[me], nxt, stream=s())
            comm.recv(out, prv, stream=s())
            comm.group_end()
            return out, xs[prv]

        def chain(xs=xs, count=count):
            # ungrouped: rank 0 sends first, the others receive then forward
            out = c.empty(torch.float32, count)
            if me == 0:
                comm.send(xs[0], 1 % n, stream=s())
                comm.recv(out, n - 1, stream=s())
            else:
                comm.recv(out, me - 1, stream=s())
                comm.send(out, (me + 1) % n, stream=s())
            return out, xs[0]

        c.run(f"grouped send/recv ring float32 n={count}", ring)
        if count <= 65537:  # a chain of blocking sends: kept within the staging
            c.run(f"send/recv chain float32 n={count}", chain)
    xs = c.inputs("int8", 100_003)

    def several():
        # two sends to the same peer in one group (two launches), plus a send to self
        a, b, own = c.empty(torch.int8, 1001), c.empty(torch.int8, 99_002), c.empty(torch.int8, 7)
        comm.group_start()
        comm.send(xs[me][:1001], nxt, stream=s())
        comm.send(xs[me][1001:], nxt, stream=s())
        comm.send(xs[me][5:12], me, stream=s())
        comm.recv(a, prv, stream=s())
        comm.recv(b, prv, stream=s())
        comm.recv(own, me, stream=s())
        comm.group_end()
        return torch.cat([a, b, own]), torch.cat([xs[prv], xs[me][5:12]])

    def barrier_waits():
        # the last rank's stream sleeps before its barrier; rank 0's barrier must wait for it
        comm.barrier()  # host barrier: start together
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if me == n - 1:
            torch.cuda._sleep(200_000_000)  # ~100 ms at 2 GHz
        t0.record()
        comm.barrier(stream=s())
        t1.record()
        t1.synchronize()
        ms = t0.elapsed_time(t1)
        if me == 0 and ms < 30:
            raise AssertionError(f"rank 0's device barrier took {ms:.1f} ms, expected >= 30")
        return None, None

    fs = c.inputs("float32", 1000)

    def cancelled_group():
        # a group whose block raises enqueues none of its calls: neither the all_reduce nor the
        # send / receive touches its buffer
        y, got = fs[me].clone(), c.empty(torch.float32, 1000)
        untouched = got.clone()
        try:
            with comm.group():
                comm.all_reduce(y, stream=s())
                comm.send(y, nxt, stream=s())
                comm.recv(got, prv, stream=s())
                comm.all_reduce(y, c.empty(torch.float32, 3), stream=s())
        except ValueError as e:
            if "recvbuf has 3 elements" not in str(e):
                raise
        else:
            raise AssertionError("the bad call of the group did not raise")
        torch.cuda.synchronize()
        return torch.cat([y, got]), torch.cat([fs[me], untouched])

    if not with_others:
        return
    c.run("a group left by an exception enqueues nothing", cancelled_group)
    c.run("grouped send/recv int8: two messages to one peer and one to self", several)
    c.run("device barrier waits for the slowest stream", barrier_waits)


def errors(c: CollectiveCases):
    comm, s = c.comm, current_stream

    def expect(label, fn, *needles):
        c.record(label, invalid_argument_problem(fn, *needles))

    g, h = torch.ones(8, device=c.dev), torch.ones(8 * c.n)
    expect(
        "device sendbuf with host recvbuf",
        lambda: comm.all_gather(g, h),
        "recvbuf is on cpu",
        str(c.dev),
    )
    expect(
        "stream= with host buffers",
        lambda: comm.all_to_all(h, h.clone(), stream=0),
        "stream= applies to GPU buffers",
    )
    fp8 = torch.zeros(8 * c.n, dtype=torch.uint8, device=c.dev)
    fp8_out = torch.zeros(8, dtype=torch.uint8, device=c.dev)
    expect(
        "reduce_scatter float8_e4m3 on GPU",
        lambda: comm.reduce_scatter(fp8, fp8_out, dtype=rc.DataType.FLOAT8_E4M3, stream=s()),
        "float8_e4m3 is not supported in reductions on GPU buffers",
    )
    ints = torch.ones(8, dtype=torch.int32, device=c.dev)
    expect(
        "reduce PREMUL_SUM int32 on GPU",
        lambda: comm.reduce(ints, ints.clone(), op=rc.RedOp.PREMUL_SUM, scalar=2.0, stream=s()),
        "premul_sum on GPU buffers needs a floating datatype, not int32",
    )


def multi_round(c: CollectiveCases):
    """Each collective once at ROUNDS_COUNT (the slow sweep: every type and op there)."""
    data_movement(c, (ROUNDS_COUNT,), ROUND_COPY_TYPES)
    reduce_scatters(c, (ROUNDS_COUNT,), ROUND_TYPE_OPS)
    reduces(c, (ROUNDS_COUNT,), ROUND_TYPE_OPS)
    point_to_point(c, (ROUNDS_COUNT,), with_others=False)


def _ops(type_ops):
    return sum(len(ops) for _, ops in type_ops)


def _nonzero(counts):
    return len([k for k in counts if k])


# family: (what the rank runs, how many cases that is with NRANKS ranks)
FAMILIES = {
    "data_movement": (
        lambda c: data_movement(c, COUNTS),
        len(COPY_TYPES) * len(COUNTS) * (4 + NRANKS),
    ),
    "reduce_scatter": (
        lambda c: reduce_scatters(c, COUNTS),
        _ops(REDUCE_TYPE_OPS) * _nonzero(COUNTS),
    ),
    "reduce": (lambda c: reduces(c, COUNTS), _ops(REDUCE_TYPE_OPS) * _nonzero(COUNTS)),
    "v_variants": (v_variants, 2 * 3 * 2 + 5 * 2),
    "in_place_and_misaligned": (
        lambda c: (in_place_and_misaligned_copies(c), in_place_and_misaligned_reductions(c)),
        2 * 4 + 1 + 4 + 3,
    ),
    "point_to_point": (lambda c: point_to_point(c, COUNTS), 2 * len(COUNTS) + 3),
    "errors": (errors, 4),
    "multi_round": (
        multi_round,
        len(ROUND_COPY_TYPES) * (4 + NRANKS) + 2 * _ops(ROUND_TYPE_OPS) + 1,
    ),
}
SLOW_FAMILIES = {
    "data_movement_rounds": (
        lambda c: data_movement(c, (ROUNDS_COUNT,)),
        len(COPY_TYPES) * (4 + NRANKS),
    ),
    "reduce_scatter_rounds": (
        lambda c: reduce_scatters(c, (ROUNDS_COUNT,)),
        _ops(REDUCE_TYPE_OPS),
    ),
    "reduce_rounds": (lambda c: reduces(c, (ROUNDS_COUNT,)), _ops(REDUCE_TYPE_OPS)),
}
ALL_FAMILIES = {**FAMILIES, **SLOW_FAMILIES}


def _family_rank(ctx, family):
    dev = rank_device(ctx)
    comm = ctx.communicator()
    c = CollectiveCases(ctx, comm, dev)
    ALL_FAMILIES[family][0](c)
    comm.destroy()
    return c.results


@pytest.mark.parametrize(
    "family",
    list(FAMILIES) + [pytest.param(f, marks=pytest.mark.slow) for f in SLOW_FAMILIES],
)
def test_collectives(family):
    results = launch(_family_rank, NRANKS, family, timeout=240)
    checks.assert_cases(results, expect_cases=ALL_FAMILIES[family][1], same_on_all_ranks=True)


# --- graph capture ---------------------------------------------------------------------------

GRAPH_COUNT = 300_001  # 1.2 MB fp32 blocks: several lanes
GRAPH_CALLS = ("all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce", "sendrecv")


def _graph_rank(ctx, replays, integers=False):
    """One CUDA graph holding every collective; replayed on fresh inputs, each replay checked.
    `integers`: inputs of whole numbers, whose sums are exact in any fold order."""
    dev = rank_device(ctx)
    comm = ctx.communicator()
    n, me, count = ctx.nranks, ctx.rank, GRAPH_COUNT
    x = torch.empty(n * count, device=dev)
    sizes = {"all_gather": n * n * count, "reduce_scatter": count}
    outs = {k: torch.empty(sizes.get(k, n * count), device=dev) for k in GRAPH_CALLS}

    def enqueue():
        s = current_stream()
        comm.all_gather(x, outs["all_gather"], stream=s)
        comm.reduce_scatter(x, outs["reduce_scatter"], op=rc.RedOp.SUM, stream=s)
        comm.all_to_all(x, outs["all_to_all"], stream=s)
        comm.broadcast(x, outs["broadcast"], root=0, stream=s)
        comm.reduce(x, outs["reduce"], root=n - 1, stream=s)
        comm.barrier(stream=s)
        comm.group_start()
        comm.send(x, (me + 1) % n, stream=s)
        comm.recv(outs["sendrecv"], (me - 1) % n, stream=s)
        comm.group_end()

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # eager warm-up, off the capture
        x.normal_()
        enqueue()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        enqueue()
    c = Cases()
    for rep in range(replays):
        xs = [make_input(torch.float32, n * count, "SUM", 9000 + rep, r, dev) for r in range(n)]
        if integers:
            xs = [(x * 8).round() for x in xs]
        x.copy_(xs[me])
        for o in outs.values():
            checks.poison(o)
        g.replay()
        torch.cuda.synchronize()
        want = {
            "all_gather": torch.cat(xs),
            "reduce_scatter": reduced([v[me * count : (me + 1) * count] for v in xs], "SUM"),
            "all_to_all": torch.cat([xs[p][me * count : (me + 1) * count] for p in range(n)]),
            "broadcast": xs[0],
            "reduce": reduced(xs, "SUM") if me == n - 1 else None,
            "sendrecv": xs[(me - 1) % n],
        }
        for k, o in outs.items():
            # every rank records every case (a non-root's reduce unchecked), so the ranks'
            # cases line up
            problem = None if want[k] is None else checks.same_bits(o, want[k])
            same = k in ("all_gather", "broadcast")
            c.record(f"graph replay {rep} {k}", problem, o if same else None)
    del g
    comm.destroy()
    return c.results


def test_graph_of_every_collective_replays_on_changing_inputs():
    replays = 20
    results = launch(_graph_rank, NRANKS, replays, timeout=240)
    checks.assert_cases(results, expect_cases=replays * len(GRAPH_CALLS))


# --- a receiver that never comes ---------------------------------------------------------------


def _stalled_receiver_rank(ctx):
    """Rank 0 sends 64 MB to rank 1, which never receives."""
    dev = rank_device(ctx)
    torch.empty(1, device=dev)  # the CUDA context exists before the communicator's clock runs
    ctx.barrier("contexts")
    comm = ctx.communicator()
    x = torch.ones(16 << 20, device=dev)
    return stalled_call(ctx, comm, lambda: comm.send(x, 1, stream=current_stream()))


def test_send_without_receiver_is_an_error_not_a_hang():
    env = {"RCCLX_TIMEOUT_MS": STALL_TIMEOUT_MS}
    outcome = launch(_stalled_receiver_rank, NRANKS, env=env)[0].value
    assert_stalled_error(outcome, "a send")


# --- next to torch.distributed -----------------------------------------------------------------


def _beside_nccl_rank(ctx):
    """The same calls through rcclx and through torch.distributed's NCCL group of the same
    ranks: bitwise-equal results (a two-rank sum rounds once either way)."""
    dist = ctx.init_torch_distributed("nccl")
    dev = torch.device("cuda", ctx.device)
    comm = ctx.communicator()
    c = CollectiveCases(ctx, comm, dev)
    n, me, count, s = c.n, c.me, 65537, current_stream

    def nccl_broadcast(x, out):
        out.copy_(x)
        dist.broadcast(out, src=1)

    calls = {  # call: (output elements, through rcclx, through NCCL)
        "all_gather": (
            n * n * count,
            lambda x, out: comm.all_gather(x, out, stream=s()),
            lambda x, out: dist.all_gather_into_tensor(out, x),
        ),
        "reduce_scatter SUM": (
            count,
            lambda x, out: comm.reduce_scatter(x, out, stream=s()),
            lambda x, out: dist.reduce_scatter_tensor(out, x),
        ),
        "broadcast root=1": (
            n * count,
            lambda x, out: comm.broadcast(x, out, root=1, stream=s()),
            nccl_broadcast,
        ),
    }
    for name in ("bfloat16", "float32", "int32"):
        x = c.inputs(name, n * count)[me]
        for call, (size, ours, theirs) in calls.items():

            def run(x=x, size=size, ours=ours, theirs=theirs):
                mine, nccl = c.empty(x.dtype, size), c.empty(x.dtype, size)
                ours(x, mine)
                theirs(x, nccl)
                return mine, nccl

            c.run(f"{call} {name}", run, same_on_all_ranks=call != "reduce_scatter SUM")
    dist.destroy_process_group()
    comm.destroy()
    return c.results


def test_results_equal_torch_distributed_nccl():
    require_gpus_per_rank(NRANKS)  # NCCL refuses two ranks on one GPU
    if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
        pytest.skip("this torch has no NCCL backend")
    results = launch(_beside_nccl_rank, NRANKS, timeout=180)
    checks.assert_cases(results, expect_cases=9)
