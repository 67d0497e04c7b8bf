"""Low precision against full precision on host buffers, side by side in one run.

    python3 tools/lp/lp_cpu_bench.py [--nranks 2] [--sizes 16M,64M] [--dtypes float32,bfloat16]
                                     [--iters 10] [--json out.json]

For each collective, size (bytes of the call's largest buffer, as RCCLX_LP_MIN_BYTES counts)
and type, every rank times the same call with low_precision=False and low_precision=True,
alternating, after a barrier each; a row reports the slowest rank's median, in milliseconds,
and LP / full (below 1: low precision is faster). The normalized error of the LP result
against the full-precision one is printed too, as a sanity check.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import time
import traceback

COLLS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")


def _parse_size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper()
    return int(t[:-1]) * mult[t[-1]] if t[-1] in mult else int(t)


def _buffers(np, coll, nbytes, n, rank, bf16):
    """(send, recv) whose larger buffer holds `nbytes`."""
    item = 2 if bf16 else 4
    total = nbytes // item // n * n  # the large buffer's elements, a multiple of n
    rng = np.random.default_rng(rank)
    big = rng.standard_normal(total).astype(np.float32)
    if bf16:
        big = (big.view(np.uint32) >> 16).astype(np.uint16)
    if coll == "all_reduce":
        return big, np.empty_like(big)
    if coll == "all_to_all":
        return big, np.empty_like(big)
    if coll == "reduce_scatter":
        return big, np.empty(total // n, dtype=big.dtype)
    return big[: total // n].copy(), np.empty_like(big)  # all_gather


def _rank_main(rank, nranks, uid, args, conn):
    try:
        import numpy as np

        import rcclx_core as rc

        comm = rc.Communicator.from_unique_id(uid, rank, nranks)
        rows = []
        for dtype in args.dtypes:
            bf16 = dtype == "bfloat16"
            kw = {"dtype": rc.DataType.BFLOAT16} if bf16 else {}
            for coll in COLLS:
                for nbytes in args.sizes:
                    send, recv = _buffers(np, coll, nbytes, nranks, rank, bf16)
                    fn = getattr(comm, coll)
                    times = {False: [], True: []}
                    outs = {}
                    for it in range(args.warmup + args.iters):
                        for lp in (False, True):
                            comm.barrier()
                            t0 = time.perf_counter()
                            fn(send, recv, low_precision=lp, **kw)
                            dt = time.perf_counter() - t0
                            if it >= args.warmup:
                                times[lp].append(dt)
                            outs[lp] = recv.copy()
                    med = {lp: statistics.median(t) for lp, t in times.items()}
                    full, low = (outs[False], outs[True])
                    if bf16:
                        full = (full.astype(np.uint32) << 16).view(np.float32)
                        low = (low.astype(np.uint32) << 16).view(np.float32)
                    full, low = full.astype(np.float64), low.astype(np.float64)
                    err = float(np.linalg.norm(low - full) / np.linalg.norm(full))
                    rows.append(
                        {
                            "collective": coll,
                            "dtype": dtype,
                            "bytes": nbytes,
                            "full_ms": med[False] * 1e3,
                            "lp_ms": med[True] * 1e3,
                            "error": err,
                        }
                    )
        comm.destroy()
        conn.send(("ok", rows))
    except BaseException:  # noqa: BLE001 - reported to the parent
        conn.send(("error", traceback.format_exc()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--sizes", default="16M,64M")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    args.sizes = [_parse_size(s) for s in args.sizes.split(",")]
    args.dtypes = args.dtypes.split(",")

    import rcclx_core as rc

    uid = rc.create_unique_id()  # the store lives in this process for the run
    ctx = mp.get_context("spawn")
    procs, conns = [], []
    for r in range(args.nranks):
        parent, child = ctx.Pipe(duplex=False)
        pr = ctx.Process(target=_rank_main, args=(r, args.nranks, uid, args, child))
        pr.start()
        procs.append(pr)
        conns.append(parent)
    results = [c.recv() for c in conns]
    for pr in procs:
        pr.join()
    failed = [r[1] for r in results if r[0] != "ok"]
    if failed:
        print("\n".join(failed))
        return 1
    per_rank = [r[1] for r in results]
    rows = []
    for i, row in enumerate(per_rank[0]):
        merged = dict(row)
        merged["full_ms"] = max(pr[i]["full_ms"] for pr in per_rank)
        merged["lp_ms"] = max(pr[i]["lp_ms"] for pr in per_rank)
        merged["error"] = max(pr[i]["error"] for pr in per_rank)
        merged["ratio"] = merged["lp_ms"] / merged["full_ms"]
        rows.append(merged)
    print(f"{args.nranks} ranks, host buffers, median of {args.iters} calls, slowest rank")
    head = ("collective", 16), ("dtype", 10), ("size", -8), ("full ms", -10), ("LP ms", -10)
    print("".join(f"{t:<{w}}" if w > 0 else f"{t:>{-w}}" for t, w in head) + "  LP/full     err")
    for r in rows:
        size = f"{r['bytes'] >> 20}M"
        print(
            f"{r['collective']:16}{r['dtype']:10}{size:>8}{r['full_ms']:10.2f}{r['lp_ms']:10.2f}"
            f"{r['ratio']:9.2f}{r['error']:8.4f}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"nranks": args.nranks, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
