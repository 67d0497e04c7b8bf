"""GPU allreduce benchmark, side by side in one run: rcclx (dda_flat, dda_tree, dda_large,
auto) against torch's NCCL and torch symmetric memory (one-shot, two-shot); from 4 MiB also
ours in place on a symmetric buffer (comm.alloc_symmetric), as the symmetric-memory peers run,
in place on an ordinary tensor registered as one (comm.register_symmetric), and with graph
registration off (RCCLX_GPU_GRAPH_REGISTER=0: captured outputs stay staged; the plain columns
have it on, so from 6 MiB their captured outputs are mapped at capture).

    python3 tools/gpu/allreduce_bench.py [--nranks 2] [--dtype bfloat16] [--sizes N,...]
                                         [--min-bytes N] [--max-bytes N] [--tuning SPEC]
                                         [--sweep]
                                         [--out bench.json]

Every column is timed the same way: 20 ops captured in one CUDA graph, the graph replayed 15
times after 3 warm-up replays (each replay queued behind a short GPU sleep, so the host's
launch latency is not timed), the median replay over 20 (microseconds per op, rank 0's
reading), the best of three passes over all columns (the second in reverse order). busbw =
bytes / time * 2 (n - 1) / n. The table ends with the ratio of our best column to the best peer
(below 1: faster), then each performance target as a ratio from this run. --sweep also times a
few launch shapes (set_gpu_tuning) per size and reports them in the JSON and a second table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_common import run_ranks, write_rank_rows  # noqa: E402

OURS = ("dda_flat", "dda_tree", "dda_large", "auto")
PEERS = ("nccl", "symm_one_shot", "symm_two_shot")
# In place on a symmetric buffer (comm.alloc_symmetric), as the symmetric-memory peers run:
# (column, algorithm, tuning, smallest size). The all-gather stores into the peers' outputs.
SYM = (
    ("dda_tree[sym]", "dda_tree", "", 4 << 20),
    ("dda_tree[sym two-shot]", "dda_tree", "tree_symmetric_min_bytes=1", 4 << 20),
    ("auto[sym]", "auto", "", 4 << 20),
)
SYM_MAX = 256 << 20
# In place on an ordinary torch tensor registered with comm.register_symmetric: (column,
# algorithm, smallest size).
REG = (("dda_tree[reg]", "dda_tree", 4 << 20),)
# With graph registration off (a communicator split off with RCCLX_GPU_GRAPH_REGISTER=0), out of
# place on ordinary tensors as the plain columns: (column, algorithm, tuning, smallest size).
STAGED = (
    ("dda_tree[staged]", "dda_tree", "", 4 << 20),
    ("dda_tree[staged two-shot]", "dda_tree", "tree_lines_max_bytes=0", 4 << 20),
    ("dda_large[staged]", "dda_large", "", 16 << 20),
)
SIZES = sorted([1 << k for k in range(10, 29, 2)] + [8 << 20])  # 1 KiB .. 256 MiB, x4, and 8 MiB
SYMM_MAX = 64 << 20
OPS_PER_GRAPH = 20
REPLAYS = 15
WARMUP = 3
QUEUE_SLEEP_CYCLES = 200_000  # ~100 us at the H200's clock: longer than queueing a replay
# Launch shapes tried by --sweep: (column, sizes, tuning spec).
SWEEP = [
    (
        "flat",
        (1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20),
        (
            "pdl=0",  # plain launches
            "flat_lines_min_bytes=1",  # 128-byte lines at every size
            "flat_lines_min_bytes=1073741824",  # LL lines at every size
            "flat_lines_min_bytes=1,lines_min_warp_lines=16",
        ),
    ),
    (
        "tree",
        (256 << 10, 1 << 20, 4 << 20, 8 << 20, 16 << 20),
        (
            "tree_lines_max_bytes=0",  # the two-shot kernel at every size
            "tree_lines_max_bytes=0,tree_stagger_bytes=0",  # ... every block starting at once
            "tree_stagger_bytes=0",  # every block of the two-shot starting at once
            "pdl=0",  # plain launches
        ),
    ),
    (
        "large",
        (16 << 20, 64 << 20, 256 << 20),
        (
            "pdl=0",  # plain launches
            "large_blocks=64,large_chunk_units=8192",
        ),
    ),
]
SWEEP.append(
    (
        "tree_sym",  # dda_tree in place on a symmetric buffer (zero-copy from 6 MiB)
        (8 << 20, 16 << 20),
        (
            "tree_stagger_bytes=0",  # every block starting at once
            "tree_stagger_bytes=1048576",
            "tree_stagger_bytes=2097152",
            "tree_max_blocks=96",
            "pdl=0",
        ),
    )
)
SWEEP_ALGO = {"flat": "dda_flat", "tree": "dda_tree", "large": "dda_large", "tree_sym": "dda_tree"}


def _time_graph(torch, fn, barrier):
    """Median microseconds per op of OPS_PER_GRAPH calls of fn captured in one graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(OPS_PER_GRAPH):
            fn()
    for _ in range(WARMUP):
        g.replay()
    torch.cuda.synchronize()
    barrier()
    times = []
    for _ in range(REPLAYS):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        # The GPU sleeps while the host queues the replay, so the host's graph-launch latency
        # (about 10 us per replay, 0.5 us per op) stays out of the time.
        torch.cuda._sleep(QUEUE_SLEEP_CYCLES)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        times.append(e0.elapsed_time(e1) * 1000.0 / OPS_PER_GRAPH)
    del g
    return statistics.median(times)


def bench_rank(info, sizes, dtype_name, sweep, base_tuning=""):
    import torch

    dist = info.init_torch("nccl")
    import torch.distributed._symmetric_memory as symm_mem

    dev = torch.device("cuda", info.device)
    dtype = getattr(torch, dtype_name)
    comm = info.communicator()
    group_name = dist.group.WORLD.group_name
    esize = torch.tensor([], dtype=dtype).element_size()
    symm_buf = symm_mem.empty(SYMM_MAX // esize, dtype=dtype, device=dev)
    symm_mem.rendezvous(symm_buf, group_name)
    our_sym = comm.alloc_symmetric(SYM_MAX)
    os.environ["RCCLX_GPU_GRAPH_REGISTER"] = "0"
    staged = comm.split(0)  # the same ranks; captured outputs stay staged
    del os.environ["RCCLX_GPU_GRAPH_REGISTER"]
    comm.set_gpu_tuning(base_tuning)
    staged.set_gpu_tuning(base_tuning)

    def tuned(spec):
        return ",".join(s for s in (base_tuning, spec) if s)

    x = torch.ones(1, device=dev)
    dist.all_reduce(x)  # NCCL's communicator exists before any capture
    torch.cuda.synchronize()

    def barrier():
        comm.barrier()

    def ours(inp, out, algo, on=comm):
        # The stream is read at call time: the capture stream while a graph is captured.
        on.all_reduce(inp, out, algo=algo, stream=torch.cuda.current_stream().cuda_stream)

    def ours_tuned(inp, out, algo, tuning, on=comm):
        on.set_gpu_tuning(tuned(tuning))  # read when the call is captured
        try:
            ours(inp, out, algo, on)
        finally:
            on.set_gpu_tuning(base_tuning)

    # Warm-up, discarded: the first timings of an idle GPU run at higher clocks than the rest.
    warm = torch.ones(1 << 20, device=dev, dtype=dtype)
    for algo in OURS:
        _try(torch, partial(ours, warm, torch.empty_like(warm), algo), barrier)

    rows = []
    for nbytes in sizes:
        count = nbytes // esize
        inp = torch.randn(count, device=dev).to(dtype)
        out = torch.empty_like(inp)
        row = {"bytes": nbytes}
        columns = [(algo, partial(ours, inp, out, algo)) for algo in OURS]
        columns.append(("nccl", partial(dist.all_reduce, inp.clone())))
        if nbytes <= SYMM_MAX:
            sb = symm_buf.narrow(0, 0, count)
            sb.copy_(inp)
            one_shot = partial(
                torch.ops.symm_mem.one_shot_all_reduce_out, sb, "sum", group_name, out
            )
            columns.append(("symm_one_shot", one_shot))
            two_shot = partial(torch.ops.symm_mem.two_shot_all_reduce_, sb, "sum", group_name)
            columns.append(("symm_two_shot", two_shot))
        if nbytes <= SYM_MAX:
            ob = our_sym.as_tensor(dtype)[:count]
            ob.copy_(inp)
            for name, algo, tuning, smallest in SYM:
                if nbytes >= smallest:
                    columns.append((name, partial(ours_tuned, ob, ob, algo, tuning)))
        for name, algo, tuning, smallest in STAGED:
            if nbytes >= smallest:
                columns.append((name, partial(ours_tuned, inp, out, algo, tuning, staged)))
        registered = None
        if any(nbytes >= smallest for *_, smallest in REG):
            reg_buf = inp.clone()
            registered = comm.register_symmetric(reg_buf)
            for name, algo, smallest in REG:
                if nbytes >= smallest:
                    columns.append((name, partial(ours, reg_buf, reg_buf, algo)))
        # Three passes over every column (the second in reverse order), each column keeping its
        # best median: no column owes its time to its place in the order, and two columns of
        # one kernel (auto and the algorithm it picks) differ by less than a replay's spread.
        for order in (columns, columns[::-1], columns):
            for name, fn in order:
                t = _try(torch, fn, barrier)
                prev = _num(row.get(name))
                if prev is None or (_num(t) is not None and t < prev):
                    row[name] = t
        if registered is not None:
            torch.cuda.synchronize()
            registered.deregister()
        row["auto_choice"] = comm.select_all_reduce(
            nbytes, dtype=9 if dtype_name == "bfloat16" else 7, gpu=True
        )[0]
        if sweep:
            for column, sweep_sizes, specs in SWEEP:
                if nbytes not in sweep_sizes:
                    continue
                for spec in specs:
                    if column == "tree_sym":
                        fn = partial(ours_tuned, ob, ob, SWEEP_ALGO[column], spec)
                    else:
                        comm.set_gpu_tuning(tuned(spec))
                        fn = partial(ours, inp, out, SWEEP_ALGO[column])
                    row[f"{column}[{spec}]"] = _try(torch, fn, barrier)
                comm.set_gpu_tuning(base_tuning)
        rows.append(row)
        if info.rank == 0:
            print(f"  {_fmt_bytes(nbytes)} done", flush=True)
    torch.cuda.synchronize()
    our_sym.free()
    staged.destroy()
    comm.destroy()
    dist.destroy_process_group()
    return rows


def _try(torch, fn, barrier):
    try:
        return _time_graph(torch, fn, barrier)
    except Exception as e:  # noqa: BLE001 - recorded as a missing number
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a dead context fails every later column too
            pass
        return f"error: {type(e).__name__}: {str(e)[:160]}"


def _fmt_bytes(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def _num(v):
    return v if isinstance(v, (int, float)) else None


def table(rows, nranks):
    cols = list(OURS) + list(PEERS)
    head = ["bytes"] + cols + ["auto=", "ours/peer", "busbw ours", "busbw nccl"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ours = [_num(r.get(c)) for c in OURS]
        peers = [_num(r.get(c)) for c in PEERS]
        best_ours = min([v for v in ours if v is not None], default=None)
        best_peer = min([v for v in peers if v is not None], default=None)
        ratio = f"{best_ours / best_peer:.2f}" if best_ours and best_peer else "-"
        factor = 2 * (nranks - 1) / nranks

        def bw(t, nbytes=r["bytes"], factor=factor):
            return f"{nbytes / (t * 1e-6) * factor / 1e9:.0f}" if t else "-"

        cells = [_fmt_bytes(r["bytes"])]
        cells += [
            f"{v:.1f}" if v is not None else ("err" if isinstance(r.get(c), str) else "-")
            for c, v in zip(cols, ours + peers)
        ]
        cells += [r.get("auto_choice", "-"), ratio, bw(best_ours), bw(_num(r.get("nccl")))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sweep_table(rows):
    lines = []
    for r in rows:
        extra = {k: v for k, v in r.items() if "[" in k}
        if not extra:
            continue
        base = {c: r.get(c == "tree_sym" and "dda_tree[sym]" or SWEEP_ALGO[c]) for c in SWEEP_ALGO}
        parts = [f"{k}={v:.1f}" if _num(v) is not None else f"{k}=err" for k, v in extra.items()]
        lines.append(
            f"{_fmt_bytes(r['bytes'])}: default "
            + ", ".join(f"{c}={_num(v) or 0:.1f}" for c, v in base.items())
            + " | "
            + ", ".join(parts)
        )
    return "\n".join(lines)


def symmetric_table(rows):
    """The zero-copy columns (symmetric buffers, registered tensors, and the plain columns, whose
    captured outputs are mapped from 6 MiB) against the staged ones (graph registration off)
    and the best peer (ratios below 1: faster)."""
    lines = []
    for r in rows:
        cols = {name: _num(r.get(name)) for name, *_ in SYM + REG}
        if not any(v is not None for v in cols.values()):
            continue
        cols.update({c: _num(r.get(c)) for c in ("dda_tree", "dda_large")})
        peers = [_num(r.get(c)) for c in PEERS]
        best_peer = min([v for v in peers if v is not None], default=None)
        plain = [_num(r.get(name)) for name, *_ in STAGED]
        best_plain = min([v for v in plain if v is not None], default=None)
        cells = []
        for name, v in cols.items():
            if v is None:
                continue
            vs_peer = f"{v / best_peer:.2f}" if best_peer else "-"
            vs_plain = f"{v / best_plain:.2f}" if best_plain else "-"
            cells.append(f"{name} {v:.1f} us ({vs_peer} of best peer, {vs_plain} of staged)")
        lines.append(f"  {_fmt_bytes(r['bytes']):>8}: " + "; ".join(cells))
    return "\n".join(lines)


def targets(rows):
    """The performance targets, each as a ratio from this run: dda_flat and dda_tree against
    the best peer (dda_tree also in place on a symmetric buffer, as the symmetric-memory peers
    run, and on a registered ordinary tensor), auto against our best algorithm, large-message
    bus bandwidth against NCCL."""
    out = []
    for r in rows:
        b = r["bytes"]
        peers = [_num(r.get(c)) for c in PEERS]
        best_peer = min([v for v in peers if v is not None], default=None)
        ours = [_num(r.get(c)) for c in OURS if c != "auto"]
        best_ours = min([v for v in ours if v is not None], default=None)
        for algo, lo, hi, bound in (
            ("dda_flat", 1 << 10, 64 << 10, 0.7),
            ("dda_tree", 256 << 10, 16 << 20, 0.9),
            ("dda_tree[sym]", 4 << 20, 16 << 20, 0.9),
            ("dda_tree[reg]", 4 << 20, 16 << 20, 0.9),
            ("dda_tree[staged]", 4 << 20, 16 << 20, 0.9),
        ):
            t = _num(r.get(algo))
            if lo <= b <= hi and t and best_peer:
                ratio = t / best_peer
                out.append((f"{algo} {_fmt_bytes(b)} / best peer", ratio, bound, ratio <= bound))
        auto = _num(r.get("auto"))
        if auto and best_ours:
            ratio = auto / best_ours
            out.append((f"auto {_fmt_bytes(b)} / our best", ratio, 1.05, ratio <= 1.05))
        nccl = _num(r.get("nccl"))
        if b >= 64 << 20 and best_ours and nccl:
            ratio = nccl / best_ours  # bus bandwidth ours / NCCL's
            out.append((f"busbw {_fmt_bytes(b)} ours / NCCL", ratio, 1.0, ratio >= 1.0))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--sizes", default="", help="comma-separated byte counts instead of the sweep")
    ap.add_argument("--min-bytes", type=int, default=0)
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--tuning", default="", help="GPU tuning applied to every column of ours")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    chosen = [int(s) for s in args.sizes.split(",") if s] or SIZES
    sizes = [s for s in chosen if args.min_bytes <= s <= args.max_bytes]
    t0 = time.monotonic()
    per_rank = run_ranks(
        bench_rank, args.nranks, sizes, args.dtype, args.sweep, args.tuning, timeout=540
    )
    rows = per_rank[0]
    errors = {
        (r["bytes"], k): v
        for r in rows
        for k, v in r.items()
        if isinstance(v, str) and v.startswith("error")
    }
    for (b, k), v in errors.items():
        print(f"{_fmt_bytes(b)} {k}: {v}")
    write_rank_rows(
        args.out,
        per_rank,
        nranks=args.nranks,
        dtype=args.dtype,
        ops_per_graph=OPS_PER_GRAPH,
        replays=REPLAYS,
    )
    if args.sweep:
        print("\nlaunch-shape sweep (us per op):")
        print(sweep_table(rows))
    print(
        f"\nallreduce {args.dtype}, {args.nranks} GPUs, us per op (CUDA graph of {OPS_PER_GRAPH}, "
        f"median of {REPLAYS} replays), {time.monotonic() - t0:.0f} s:"
    )
    print(table(rows, args.nranks))
    sym = symmetric_table(rows)
    if sym:
        print(
            "\noutputs in a symmetric buffer, allocated [sym] or a registered tensor [reg] (in "
            "place, zero-copy all-gather), us per op:"
        )
        print(sym)
    checks = targets(rows)
    print("\ntargets (ratio from this run, bound):")
    for label, ratio, bound, ok in checks:
        print(f"  {label:38s} {ratio:5.2f}  (bound {bound:.2f})  {'met' if ok else 'NOT MET'}")
    print(f"  {sum(ok for *_, ok in checks)}/{len(checks)} met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
