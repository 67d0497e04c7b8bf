"""Low-precision collectives on GPU buffers against NCCL and our full precision, side by side in
one run.

    python3 tools/gpu/lp_bench.py [--nranks 2] [--dtypes float32,bfloat16] [--out lp_bench.json]

For all_reduce, all_gather, reduce_scatter and all_to_all, float32 and bfloat16, 1 MiB..256 MiB
(`bytes`: the call's larger buffer, as nccl-tests), three columns timed as the other GPU
benchmarks time them (allreduce_bench._time_graph: 20 ops in one CUDA graph, median replay,
rank 0, microseconds per op): torch's NCCL (full precision), rcclx full precision
(low_precision=False) and rcclx low precision (low_precision=True, FP8 e4m3 on the wire).
Ratios: LP / NCCL and LP / rcclx full precision (below 1: LP is faster).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from allreduce_bench import OPS_PER_GRAPH, REPLAYS, _fmt_bytes, _num, _try  # noqa: E402
from gpu_common import run_ranks, write_rank_rows  # noqa: E402

COLLS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")
# --sweep: launch shapes (RCCLX_LP_GPU_BLOCKS, RCCLX_LP_GPU_CHUNK_BLOCKS, staging) for the
# all_reduce at 64 MiB, float32 and bfloat16.
SWEEP = [
    (256, 128, "40M"),
    (256, 64, "40M"),
    (256, 32, "40M"),
    (192, 128, "40M"),
]


def sweep_rank(info, nbytes):
    import torch

    import rcclx_core

    torch.cuda.set_device(info.device)
    dev = torch.device("cuda", info.device)
    rows = []
    for i, (blocks, chunk, staging) in enumerate(SWEEP):
        os.environ.update(
            {
                "RCCLX_LP_GPU_BLOCKS": str(blocks),
                "RCCLX_LP_GPU_CHUNK_BLOCKS": str(chunk),
                "RCCLX_LP_GPU_STAGING_BYTES": staging,
            }
        )
        comm = rcclx_core.Communicator.from_unique_id(
            info.extra_ids[i], info.rank, info.nranks, device=info.device
        )

        def barrier(comm=comm):
            comm.barrier()

        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(nbytes // torch.tensor([], dtype=dtype).element_size(), device=dev)
            x = x.to(dtype)
            y = torch.empty_like(x)

            def call(comm=comm, x=x, y=y):
                comm.all_reduce(
                    x, y, stream=torch.cuda.current_stream().cuda_stream, low_precision=True
                )

            rows.append(
                {
                    "blocks": blocks,
                    "chunk": chunk,
                    "staging": staging,
                    "dtype": str(dtype).split(".")[-1],
                    "us": _try(torch, call, barrier),
                }
            )
        comm.destroy()
    return rows


SIZES = [1 << k for k in (20, 22, 24, 26, 28)]  # 1 MiB .. 256 MiB


def bench_rank(info, sizes, dtypes, colls):
    import torch

    dist = info.init_torch("nccl")
    dev = torch.device("cuda", info.device)
    n = info.nranks
    comm = info.communicator()
    x = torch.ones(1, device=dev)
    dist.all_reduce(x)  # NCCL's communicator exists before any capture
    torch.cuda.synchronize()

    def barrier():
        comm.barrier()

    def ours(method, lp, *bufs):
        getattr(comm, method)(
            *bufs, stream=torch.cuda.current_stream().cuda_stream, low_precision=lp
        )

    rows = []
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        esize = torch.tensor([], dtype=dtype).element_size()
        for nbytes in sizes:
            total = nbytes // esize // n * n
            big = torch.randn(total, device=dev).to(dtype)
            big_out = torch.empty_like(big)
            small = big[: total // n].clone()
            small_out = torch.empty_like(small)
            calls = {
                "all_reduce": (
                    partial(dist.all_reduce, big_out),
                    ("all_reduce", big, big_out),
                ),
                "all_gather": (
                    partial(dist.all_gather_into_tensor, big_out, small),
                    ("all_gather", small, big_out),
                ),
                "reduce_scatter": (
                    partial(dist.reduce_scatter_tensor, small_out, big),
                    ("reduce_scatter", big, small_out),
                ),
                "all_to_all": (
                    partial(dist.all_to_all_single, big_out, big),
                    ("all_to_all", big, big_out),
                ),
            }
            for coll in colls:
                nccl_fn, (method, *bufs) = calls[coll]
                row = {"coll": coll, "dtype": dtype_name, "bytes": nbytes}
                row["nccl"] = _try(torch, nccl_fn, barrier)
                row["full"] = _try(torch, partial(ours, method, False, *bufs), barrier)
                row["lp"] = _try(torch, partial(ours, method, True, *bufs), barrier)
                rows.append(row)
            del big, big_out, small, small_out
            torch.cuda.empty_cache()
            if info.rank == 0:
                print(f"  {dtype_name} {_fmt_bytes(nbytes)} done", flush=True)
    comm.destroy()
    dist.destroy_process_group()
    return rows


def table(rows):
    head = ["collective", "dtype", "bytes", "nccl", "rcclx full", "rcclx LP", "LP/nccl", "LP/full"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        nccl, full, lp = (_num(r.get(k)) for k in ("nccl", "full", "lp"))
        cells = [r["coll"], r["dtype"], _fmt_bytes(r["bytes"])]
        cells += [f"{v:.1f}" if v else "err" for v in (nccl, full, lp)]
        cells.append(f"{lp / nccl:.2f}" if lp and nccl else "-")
        cells.append(f"{lp / full:.2f}" if lp and full else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--colls", default=",".join(COLLS))
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--out", default="")
    ap.add_argument("--sweep", action="store_true", help="launch shapes of the 64 MiB all_reduce")
    args = ap.parse_args()
    if args.sweep:
        rows = run_ranks(sweep_rank, args.nranks, 64 << 20, extra_ids=len(SWEEP), timeout=300)[0]
        print("LP all_reduce 64 MiB, us per op by (blocks, chunk blocks, staging):")
        for r in rows:
            print(f"  {r['blocks']:4d} {r['chunk']:4d} {r['staging']:>5} {r['dtype']:9} {r['us']}")
        return 0
    sizes = [s for s in SIZES if s <= args.max_bytes]
    dtypes = args.dtypes.split(",")
    colls = args.colls.split(",")
    t0 = time.monotonic()
    per_rank = run_ranks(bench_rank, args.nranks, sizes, dtypes, colls, timeout=500)
    rows = per_rank[0]
    for r in rows:
        for k in ("nccl", "full", "lp"):
            if isinstance(r.get(k), str):
                print(f"{r['coll']} {r['dtype']} {_fmt_bytes(r['bytes'])} {k}: {r[k]}")
    write_rank_rows(
        args.out,
        per_rank,
        nranks=args.nranks,
        ops_per_graph=OPS_PER_GRAPH,
        replays=REPLAYS,
    )
    print(
        f"\nlow precision on {args.nranks} GPUs, us per op (CUDA graph of {OPS_PER_GRAPH}, median "
        f"of {REPLAYS} replays; LP = FP8 e4m3 wire, 256-element blocks), "
        f"{time.monotonic() - t0:.0f} s:"
    )
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
