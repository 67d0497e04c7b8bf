"""GPU correctness of every collective but allreduce on N GPUs (one process each): all_gather(_v),
reduce_scatter(_v), all_to_all(_v), broadcast, reduce, gather, scatter, send / recv (single,
grouped, several to one peer, to self), barrier; the reductions with every operator (PREMUL_SUM
with a different scalar per rank, the bitwise operators on integers of every width); odd counts,
misaligned views, in place, messages many times the staging; one CUDA graph of all of them
replayed on fresh inputs; a receiver that never comes turning into an error within the timeout;
clear errors for mixed buffers and for what GPU reductions do not support.

    python3 tools/gpu/collectives_check.py [--nranks 2] [--replays 20] [--out check.json]

Inputs are random, seeded by (case, rank), so every rank rebuilds every rank's input. Outputs are
poisoned first (NaN / 77) and compared *bitwise* with a torch reference that reduces the way the
kernels promise: in rank order, 16-bit floats accumulated in fp32 and rounded once, integers
wrapping in their own width, PREMUL_SUM inputs scaled in float64 and rounded as the host path
rounds them. Outputs that are the same on every rank (all_gather, broadcast) are
also compared across ranks by digest.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_cases import (  # noqa: E402
    BITWISE,
    digest,
    make_input,
    poison,
    premul_input,
    premul_scalar,
)
from gpu_common import combine_pair, run_ranks  # noqa: E402

COUNTS = (0, 1, 3, 1001, 65537, 3_000_001)  # the last: 12 MB fp32 blocks, several rounds
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


def reduce_exact(torch, xs, op, n):
    """op over xs in list (rank) order, as the kernels compute it (xs[r] is rank r's input)."""
    dtype = xs[0].dtype
    if op == "PREMUL_SUM":
        xs = [premul_input(torch, x, r) for r, x in enumerate(xs)]
    if dtype in (torch.float16, torch.bfloat16):
        acc_t = torch.float32
    elif dtype.is_floating_point:
        acc_t = dtype
    else:
        acc_t = torch.int64
    acc = xs[0].to(acc_t)
    for x in xs[1:]:
        acc = combine_pair(torch, op, acc, x.to(acc_t))
    if op == "AVG":
        if dtype.is_floating_point:
            acc = acc / torch.full_like(acc, n)  # a true division, as the kernel's
        else:
            wrapped = acc.to(dtype).to(torch.int64)  # the kernel's sum wraps in its own width
            acc = torch.div(wrapped, n, rounding_mode="trunc")
    return acc.to(dtype)


def _mismatch(torch, out, want):
    if out.shape != want.shape:
        return f"shape {tuple(out.shape)} != {tuple(want.shape)}"
    a = out.contiguous().view(-1).view(torch.uint8)
    b = want.contiguous().view(-1).view(torch.uint8)
    if torch.equal(a, b):
        return None
    esize = out.element_size()
    bad = ((a != b).nonzero().flatten() // esize).unique()
    idx = bad[:4].tolist()
    return (
        f"{bad.numel()} of {out.numel()} elements differ, first at {idx}: "
        f"got {out.view(-1)[idx].tolist()} want {want.view(-1)[idx].tolist()}"
    )


class Cases:
    """Runs cases on one rank; every rank runs the same cases in the same order."""

    def __init__(self, torch, info, comm, dev):
        self.torch, self.info, self.comm, self.dev = torch, info, comm, dev
        self.n, self.me = info.nranks, info.rank
        self.results = []
        self.seed = 0

    def inputs(self, dtype_name, count, op="SUM"):
        """Every rank's input of this case (this rank's at [me])."""
        self.seed += 1
        dt = getattr(self.torch, dtype_name)
        return [
            make_input(self.torch, dt, count, op, self.seed, r, self.dev) for r in range(self.n)
        ]

    def stream(self):
        return self.torch.cuda.current_stream().cuda_stream

    def run(self, label, fn, same_on_all_ranks=False):
        """fn() enqueues the call and returns (out, want); compared after a synchronize."""
        try:
            out, want = fn()
            self.torch.cuda.synchronize()
            problem = None if want is None else _mismatch(self.torch, out, want)
        except Exception as e:  # noqa: BLE001 - reported per case
            problem, out = f"{type(e).__name__}: {str(e)[:300]}", None
        hashed = digest(out) if (problem is None and same_on_all_ranks) else None
        self.results.append({"case": label, "error": problem, "digest": hashed})

    def empty(self, dtype, count, misaligned=False):
        t = self.torch.empty(count + (1 if misaligned else 0), dtype=dtype, device=self.dev)
        t = t[1:] if misaligned else t
        poison(self.torch, t)
        return t


def copy_cases(c: Cases, counts):
    torch, n, me = c.torch, c.n, c.me
    for name in COPY_TYPES:
        dt = getattr(torch, name)
        for count in counts:
            xs = c.inputs(name, count)

            def ag(xs=xs, dt=dt, count=count):
                out = c.empty(dt, n * count)
                c.comm.all_gather(xs[me], out, stream=c.stream())
                return out, torch.cat(xs)

            c.run(f"all_gather {name} n={count}", ag, same_on_all_ranks=True)

            def a2a(xs=xs, dt=dt, count=count):
                # rank r's input is n blocks of count // n (+ the rest unused)
                per = count // n
                out = c.empty(dt, n * per)
                c.comm.all_to_all(xs[me][: n * per], out, stream=c.stream())
                want = torch.cat([xs[p][me * per : (me + 1) * per] for p in range(n)])
                return out, want

            c.run(f"all_to_all {name} n={count}", a2a)
            for root in range(n):

                def bc(xs=xs, dt=dt, count=count, root=root):
                    out = c.empty(dt, count)
                    c.comm.broadcast(xs[me], out, root=root, stream=c.stream())
                    return out, xs[root]

                c.run(f"broadcast root={root} {name} n={count}", bc, same_on_all_ranks=True)

            def ga(xs=xs, dt=dt, count=count, root=n - 1):
                out = c.empty(dt, n * count) if me == root else None
                c.comm.gather(xs[me], out, root=root, stream=c.stream())
                return (out, torch.cat(xs)) if me == root else (None, None)

            c.run(f"gather root={n - 1} {name} n={count}", ga)

            def sc(xs=xs, dt=dt, count=count, root=0):
                per = count // n
                out = c.empty(dt, per)
                send = xs[me][: n * per] if me == root else None
                c.comm.scatter(send, out, root=root, stream=c.stream())
                return out, xs[root][me * per : (me + 1) * per]

            c.run(f"scatter root=0 {name} n={count}", sc)
    # v variants: every rank a different count; odd ones, so blocks land misaligned.
    for name in ("bfloat16", "int8"):
        dt = getattr(torch, name)
        for base in (1, 4097, 1_500_001):
            counts_v = [base + 3 * r for r in range(n)]
            c.seed += 1
            xs = [make_input(torch, dt, counts_v[r], "SUM", c.seed, r, c.dev) for r in range(n)]

            def agv(xs=xs, dt=dt, counts_v=counts_v):
                out = c.empty(dt, sum(counts_v))
                c.comm.all_gather_v(xs[me], out, counts_v, stream=c.stream())
                return out, torch.cat(xs)

            c.run(f"all_gather_v {name} counts={counts_v}", agv, same_on_all_ranks=True)

            # all_to_all_v: rank s sends C[s][d] = base + s + 2 d elements to d.
            def cnt(s, d, base=base):
                return base + s + 2 * d

            def a2av(xs=xs, dt=dt, cnt=cnt):
                sc_ = [cnt(me, d) for d in range(n)]
                rc_ = [cnt(s, me) for s in range(n)]
                sends = [
                    make_input(
                        torch, dt, sum(cnt(s, d) for d in range(n)), "SUM", c.seed + 7, s, c.dev
                    )
                    for s in range(n)
                ]
                out = c.empty(dt, sum(rc_))
                c.comm.all_to_all_v(sends[me], out, sc_, rc_, stream=c.stream())
                parts = []
                for s in range(n):
                    off = sum(cnt(s, d) for d in range(me))
                    parts.append(sends[s][off : off + cnt(s, me)])
                return out, torch.cat(parts)

            c.run(f"all_to_all_v {name} base={base}", a2av)
    # In place and misaligned.
    for name in ("bfloat16", "float32"):
        dt = getattr(torch, name)
        xs = c.inputs(name, 70001)

        def ag_inplace(xs=xs, dt=dt):
            out = c.empty(dt, n * 70001)
            mine = out[me * 70001 : (me + 1) * 70001]
            mine.copy_(xs[me])
            c.comm.all_gather(mine, out, stream=c.stream())
            return out, torch.cat(xs)

        c.run(f"all_gather {name} n=70001 in place", ag_inplace, same_on_all_ranks=True)

        def ag_misaligned(xs=xs, dt=dt):
            src = c.empty(dt, 70001, misaligned=True)
            src.copy_(xs[me])
            out = c.empty(dt, n * 70001, misaligned=True)
            c.comm.all_gather(src, out, stream=c.stream())
            return out, torch.cat(xs)

        c.run(f"all_gather {name} n=70001 misaligned", ag_misaligned, same_on_all_ranks=True)

        def bc_inplace(xs=xs, dt=dt):
            buf = xs[me].clone()
            c.comm.broadcast(buf, root=1 % n, stream=c.stream())
            return buf, xs[1 % n]

        c.run(f"broadcast {name} n=70001 in place", bc_inplace, same_on_all_ranks=True)


def reduce_cases(c: Cases, counts):
    torch, n, me = c.torch, c.n, c.me

    def scalar(op):
        """This rank's PREMUL_SUM scalar as a keyword argument (none for other operators)."""
        return {"scalar": premul_scalar(me)} if op == "PREMUL_SUM" else {}

    for name, ops in REDUCE_TYPE_OPS:
        dt = getattr(torch, name)
        for op in ops:
            rop = getattr(__import__("rcclx_core").RedOp, op)
            for count in counts:
                if count == 0:
                    continue
                xs = c.inputs(name, n * count, op)

                def rs(xs=xs, dt=dt, count=count, op=op, rop=rop):
                    out = c.empty(dt, count)
                    c.comm.reduce_scatter(xs[me], out, op=rop, stream=c.stream(), **scalar(op))
                    blocks = [x[me * count : (me + 1) * count] for x in xs]
                    return out, reduce_exact(torch, blocks, op, n)

                c.run(f"reduce_scatter {name} {op} n={count}", rs)

                def rd(xs=xs, dt=dt, count=count, op=op, rop=rop, root=(count % n)):
                    out = c.empty(dt, n * count) if me == root else None
                    c.comm.reduce(xs[me], out, root=root, op=rop, stream=c.stream(), **scalar(op))
                    if me != root:
                        return None, None
                    return out, reduce_exact(torch, xs, op, n)

                c.run(f"reduce root={count % n} {name} {op} n={n * count}", rd)
    for name, op in (
        ("bfloat16", "SUM"),
        ("float32", "SUM"),
        ("int32", "SUM"),
        ("float32", "PREMUL_SUM"),
        ("int64", "BXOR"),
    ):
        dt = getattr(torch, name)
        rop = getattr(__import__("rcclx_core").RedOp, op)
        for base in (5, 1_000_003):
            counts_v = [base + 2 * r for r in range(n)]
            xs = c.inputs(name, sum(counts_v), op)

            def rsv(xs=xs, dt=dt, counts_v=counts_v, op=op, rop=rop):
                out = c.empty(dt, counts_v[me])
                c.comm.reduce_scatter_v(
                    xs[me], out, counts_v, op=rop, stream=c.stream(), **scalar(op)
                )
                off = sum(counts_v[:me])
                blocks = [x[off : off + counts_v[me]] for x in xs]
                return out, reduce_exact(torch, blocks, op, n)

            c.run(f"reduce_scatter_v {name} {op} counts={counts_v}", rsv)
    xs = c.inputs("bfloat16", n * 4099 + 1)

    def rs_inplace(xs=xs):
        buf = xs[me][: n * 4099].clone()
        out = buf[me * 4099 : (me + 1) * 4099]
        c.comm.reduce_scatter(buf, out, stream=c.stream())
        blocks = [x[me * 4099 : (me + 1) * 4099] for x in xs]
        return out, reduce_exact(torch, blocks, "SUM", n)

    c.run("reduce_scatter bfloat16 n=4099 in place", rs_inplace)

    def rs_misaligned(xs=xs):
        send = xs[me][1:]  # 2 bytes off 16-byte alignment: the element-wise path
        out = c.empty(torch.bfloat16, 4099, misaligned=True)
        c.comm.reduce_scatter(send, out, stream=c.stream())
        blocks = [x[1 + me * 4099 : 1 + (me + 1) * 4099] for x in xs]
        return out, reduce_exact(torch, blocks, "SUM", n)

    c.run("reduce_scatter bfloat16 n=4099 misaligned", rs_misaligned)
    # The other operators on the element-wise path: views 2 (bf16), 8 (int64) and 1 (uint8) bytes
    # off 16-byte alignment, for reduce_scatter and for reduce (whose non-roots send the view).
    for name, op in (("bfloat16", "PREMUL_SUM"), ("int64", "BAND"), ("uint8", "BXOR")):
        dt = getattr(torch, name)
        rop = getattr(__import__("rcclx_core").RedOp, op)
        xs = c.inputs(name, n * 4099 + 1, op)

        def rs_mis(xs=xs, dt=dt, op=op, rop=rop):
            out = c.empty(dt, 4099, misaligned=True)
            c.comm.reduce_scatter(xs[me][1:], out, op=rop, stream=c.stream(), **scalar(op))
            blocks = [x[1 + me * 4099 : 1 + (me + 1) * 4099] for x in xs]
            return out, reduce_exact(torch, blocks, op, n)

        c.run(f"reduce_scatter {name} {op} n=4099 misaligned", rs_mis)

        def rd_mis(xs=xs, dt=dt, op=op, rop=rop, root=n - 1):
            out = c.empty(dt, n * 4099, misaligned=True) if me == root else None
            c.comm.reduce(xs[me][1:], out, root=root, op=rop, stream=c.stream(), **scalar(op))
            if me != root:
                return None, None
            return out, reduce_exact(torch, [x[1:] for x in xs], op, n)

        c.run(f"reduce root={n - 1} {name} {op} n={n * 4099} misaligned", rd_mis)


def p2p_cases(c: Cases, counts):
    torch, n, me = c.torch, c.n, c.me
    nxt, prv = (me + 1) % n, (me - 1) % n
    for count in counts:
        xs = c.inputs("float32", count)

        def ring(xs=xs, count=count):
            out = c.empty(torch.float32, count)
            c.comm.group_start()
            c.comm.send(xs[me], nxt, stream=c.stream())
            c.comm.recv(out, prv, stream=c.stream())
            c.comm.group_end()
            return out, xs[prv]

        c.run(f"grouped send/recv ring float32 n={count}", ring)

        def ordered(xs=xs, count=count):
            # ungrouped: rank 0 sends first, the others receive then forward (a chain)
            out = c.empty(torch.float32, count)
            if me == 0:
                c.comm.send(xs[0], 1 % n, stream=c.stream())
                if n > 1:
                    c.comm.recv(out, n - 1, stream=c.stream())
            else:
                c.comm.recv(out, me - 1, stream=c.stream())
                c.comm.send(out, (me + 1) % n, stream=c.stream())
            return out, xs[0]

        if count <= 65537:  # a chain of blocking sends: kept within the staging
            c.run(f"send/recv chain float32 n={count}", ordered)
    xs = c.inputs("int8", 100_003)

    def several(xs=xs):
        # two sends to the same peer in one group (two launches), plus a send to self
        a = c.empty(torch.int8, 1001)
        b = c.empty(torch.int8, 99_002)
        s = c.empty(torch.int8, 7)
        c.comm.group_start()
        c.comm.send(xs[me][:1001], nxt, stream=c.stream())
        c.comm.send(xs[me][1001:], nxt, stream=c.stream())
        c.comm.send(xs[me][5:12], me, stream=c.stream())
        c.comm.recv(a, prv, stream=c.stream())
        c.comm.recv(b, prv, stream=c.stream())
        c.comm.recv(s, me, stream=c.stream())
        c.comm.group_end()
        return torch.cat([a, b, s]), torch.cat([xs[prv], xs[me][5:12]])

    c.run("grouped send/recv int8: two messages to one peer and one to self", several)

    def barrier_waits():
        # the last rank's stream sleeps before its barrier; rank 0's barrier must wait for it
        c.comm.barrier()  # host barrier: start together
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if me == n - 1:
            torch.cuda._sleep(200_000_000)  # ~100 ms at 2 GHz
        t0.record()
        c.comm.barrier(stream=c.stream())
        t1.record()
        t1.synchronize()
        ms = t0.elapsed_time(t1)
        if me == 0 and ms < 30:
            raise AssertionError(f"rank 0's device barrier took {ms:.1f} ms, expected >= 30")
        return None, None

    c.run("device barrier waits for the slowest stream", barrier_waits)


def error_cases(c: Cases):
    torch = c.torch
    import rcclx_core as rc

    def expect(fn, *needles):
        try:
            fn()
        except rc.InvalidArgumentError as e:
            msg = str(e)
            missing = [s for s in needles if s not in msg]
            if missing:
                raise AssertionError(f"message lacks {missing}: {msg}") from None
            return None, None
        raise AssertionError("no error raised")

    g = torch.ones(8, device=c.dev)
    h = torch.ones(8 * c.n)
    c.run(
        "error: device sendbuf with host recvbuf",
        lambda: expect(lambda: c.comm.all_gather(g, h), "recvbuf is on cpu", str(c.dev)),
    )
    c.run(
        "error: stream= with host buffers",
        lambda: expect(
            lambda: c.comm.all_to_all(h, h.clone(), stream=0), "stream= applies to GPU buffers"
        ),
    )
    fp8 = torch.zeros(8 * c.n, dtype=torch.uint8, device=c.dev)
    fp8_out = torch.zeros(8, dtype=torch.uint8, device=c.dev)
    c.run(
        "error: reduce_scatter float8_e4m3 on GPU",
        lambda: expect(
            lambda: c.comm.reduce_scatter(
                fp8, fp8_out, dtype=rc.DataType.FLOAT8_E4M3, stream=c.stream()
            ),
            "float8_e4m3 is not supported in reductions on GPU buffers",
        ),
    )
    ints = torch.ones(8, dtype=torch.int32, device=c.dev)
    c.run(
        "error: reduce PREMUL_SUM int32 on GPU",
        lambda: expect(
            lambda: c.comm.reduce(
                ints, ints.clone(), op=rc.RedOp.PREMUL_SUM, scalar=2.0, stream=c.stream()
            ),
            "premul_sum on GPU buffers needs a floating datatype, not int32",
        ),
    )


def check_rank(info, counts):
    import torch

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    comm = info.communicator()
    c = Cases(torch, info, comm, dev)
    copy_cases(c, counts)
    reduce_cases(c, counts)
    p2p_cases(c, counts)
    error_cases(c)
    comm.destroy()
    return c.results


def graph_rank(info, replays):
    """One CUDA graph holding every collective; replayed on fresh inputs, each replay checked."""
    import torch

    import rcclx_core as rc

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    comm = info.communicator()
    n, me = info.nranks, info.rank
    count = 300_001  # 1.2 MB fp32 blocks: several lanes
    x = torch.empty(n * count, device=dev)
    outs = {
        "all_gather": torch.empty(n * n * count, device=dev),
        "reduce_scatter": torch.empty(count, device=dev),
        "all_to_all": torch.empty(n * count, device=dev),
        "broadcast": torch.empty(n * count, device=dev),
        "reduce": torch.empty(n * count, device=dev),
        "sendrecv": torch.empty(n * count, device=dev),
    }

    def ops():
        s = torch.cuda.current_stream().cuda_stream
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
        ops()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        ops()
    results = []
    for rep in range(replays):
        seed = 9000 + rep
        xs = [make_input(torch, torch.float32, n * count, "SUM", seed, r, dev) for r in range(n)]
        x.copy_(xs[me])
        for o in outs.values():
            poison(torch, o)
        g.replay()
        torch.cuda.synchronize()
        want = {
            "all_gather": torch.cat(xs),
            "reduce_scatter": reduce_exact(
                torch, [v[me * count : (me + 1) * count] for v in xs], "SUM", n
            ),
            "all_to_all": torch.cat([xs[p][me * count : (me + 1) * count] for p in range(n)]),
            "broadcast": xs[0],
            "reduce": reduce_exact(torch, xs, "SUM", n) if me == n - 1 else None,
            "sendrecv": xs[(me - 1) % n],
        }
        for k, o in outs.items():
            # every rank records every case (a non-root's reduce trivially), so the ranks'
            # lists line up case by case
            problem = None if want[k] is None else _mismatch(torch, o, want[k])
            same = k in ("all_gather", "broadcast")
            results.append(
                {
                    "case": f"graph replay {rep} {k}",
                    "error": problem,
                    "digest": digest(o) if problem is None and same else None,
                }
            )
    del g
    comm.destroy()
    return results


def stalled_receiver_rank(info, timeout_ms):
    """Rank 0 sends 64 MB to rank 1, which never receives: rank 0 must fail within ~timeout."""
    os.environ["RCCLX_TIMEOUT_MS"] = str(timeout_ms)
    import torch

    torch.cuda.set_device(info.device)
    comm = info.communicator()
    if info.rank != 0:
        time.sleep(timeout_ms / 1000 + 6)
        return None
    x = torch.ones(16 << 20, device="cuda")
    t0 = time.monotonic()
    try:
        comm.send(x, 1, stream=torch.cuda.current_stream().cuda_stream)
        torch.cuda.synchronize()
        return {"error": None, "seconds": time.monotonic() - t0}
    except Exception as e:  # noqa: BLE001 - the expected outcome
        return {"error": f"{type(e).__name__}: {e}"[:200], "seconds": time.monotonic() - t0}


def fold(per_rank, failures):
    """Checks every rank's cases (same order everywhere); returns (cases, passed)."""
    ok = 0
    for cases in zip(*per_rank):
        errs = [(r, c["error"]) for r, c in enumerate(cases) if c["error"]]
        digests = {c["digest"] for c in cases}
        if errs:
            failures.append(f"{cases[0]['case']}: " + "; ".join(f"rank {r}: {e}" for r, e in errs))
        elif len(digests) != 1:
            failures.append(f"{cases[0]['case']}: ranks' results differ bitwise")
        else:
            ok += 1
    return len(per_rank[0]), ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--replays", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("--skip-stall", action="store_true")
    args = ap.parse_args()
    t0 = time.monotonic()
    failures: list[str] = []
    summary = {}
    for name, fn, arg, limit in (
        ("correctness", check_rank, COUNTS, 400),
        ("graph", graph_rank, args.replays, 200),
    ):
        total, ok = fold(run_ranks(fn, args.nranks, arg, timeout=limit), failures)
        summary[name] = {"cases": total, "passed": ok}
        print(f"{name}: {ok}/{total} cases passed ({time.monotonic() - t0:.0f} s)", flush=True)
    if not args.skip_stall:
        try:
            st = run_ranks(stalled_receiver_rank, args.nranks, 2000, timeout=60)[0]
        except Exception as e:  # noqa: BLE001
            st = {"error": None, "seconds": -1, "launcher": str(e)[-500:]}
        stall_ok = st["error"] is not None and 0 < st["seconds"] < 15
        summary["stalled_receiver"] = {**st, "ok": stall_ok}
        print(f"stalled receiver: {st} -> {'ok' if stall_ok else 'FAILED'}", flush=True)
        if not stall_ok:
            failures.append(f"a send without its receiver did not fail in time: {st}")
    for f in failures[:60]:
        print("FAIL", f)
    summary["failures"] = failures
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(summary, fh, indent=1)
    verdict = "PASS" if not failures else f"{len(failures)} FAILURES"
    print(f"GPU collectives correctness: {verdict} ({time.monotonic() - t0:.0f} s)")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
