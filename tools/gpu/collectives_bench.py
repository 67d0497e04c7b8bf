"""GPU all_gather / reduce_scatter / all_to_all benchmark, rcclx against torch's NCCL side by side
in one run.

    python3 tools/gpu/collectives_bench.py [--nranks 2] [--dtype bfloat16] [--out bench.json]

`bytes` is the larger buffer of the call (nccl-tests' size): all_gather's output,
reduce_scatter's input, all_to_all's input (= output). Each column is timed as the allreduce
benchmark times it (allreduce_bench._time_graph): 20 ops captured in one CUDA graph, the graph
replayed 15 times after 3 warm-ups, the median replay over 20, rank 0's reading, microseconds
per op. busbw = bytes / time * (n - 1) / n for all three (nccl-tests' convention).
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

OPS = ("all_gather", "reduce_scatter", "all_to_all")
SIZES = [1 << k for k in (14, 16, 18, 20, 22, 24, 26, 28)]  # 16 KiB .. 256 MiB


def bench_rank(info, sizes, dtype_name):
    import torch

    dist = info.init_torch("nccl")
    dev = torch.device("cuda", info.device)
    dtype = getattr(torch, dtype_name)
    n = info.nranks
    comm = info.communicator()
    x = torch.ones(1, device=dev)
    dist.all_reduce(x)  # NCCL's communicator exists before any capture
    torch.cuda.synchronize()

    def barrier():
        comm.barrier()

    def ours(method, inp, out):
        # The stream is read at call time: the capture stream while a graph is captured.
        getattr(comm, method)(inp, out, stream=torch.cuda.current_stream().cuda_stream)

    esize = torch.tensor([], dtype=dtype).element_size()
    rows = []
    for nbytes in sizes:
        total = nbytes // esize // n * n  # elements of the larger buffer
        big = torch.randn(total, device=dev).to(dtype)
        big_out = torch.empty_like(big)
        small = big[: total // n].clone()
        small_out = torch.empty_like(small)
        calls = {
            "all_gather/rcclx": partial(ours, "all_gather", small, big_out),
            "all_gather/nccl": partial(dist.all_gather_into_tensor, big_out, small),
            "reduce_scatter/rcclx": partial(ours, "reduce_scatter", big, small_out),
            "reduce_scatter/nccl": partial(dist.reduce_scatter_tensor, small_out, big),
            "all_to_all/rcclx": partial(ours, "all_to_all", big, big_out),
            "all_to_all/nccl": partial(dist.all_to_all_single, big_out, big),
        }
        row = {"bytes": nbytes}
        for column, fn in calls.items():
            row[column] = _try(torch, fn, barrier)
        rows.append(row)
        if info.rank == 0:
            print(f"  {_fmt_bytes(nbytes)} done", flush=True)
    comm.destroy()
    dist.destroy_process_group()
    return rows


def _busbw(nbytes, us, factor):
    return f"{nbytes / (us * 1e-6) * factor / 1e9:.0f}" if us else "-"


def table(rows, nranks):
    factor = (nranks - 1) / nranks
    head = ["bytes"]
    for op in OPS:
        head += [f"{op} rcclx", "nccl", "ratio"]
    head += ["busbw ag/rs/a2a rcclx", "nccl"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [_fmt_bytes(r["bytes"])]
        bw_ours, bw_nccl = [], []
        for op in OPS:
            ours, nccl = _num(r.get(f"{op}/rcclx")), _num(r.get(f"{op}/nccl"))
            cells.append(f"{ours:.1f}" if ours else "err")
            cells.append(f"{nccl:.1f}" if nccl else "err")
            cells.append(f"{ours / nccl:.2f}" if ours and nccl else "-")
            bw_ours.append(_busbw(r["bytes"], ours, factor))
            bw_nccl.append(_busbw(r["bytes"], nccl, factor))
        cells += ["/".join(bw_ours), "/".join(bw_nccl)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nranks", type=int, default=2)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--max-bytes", type=int, default=256 << 20)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    sizes = [s for s in SIZES if s <= args.max_bytes]
    t0 = time.monotonic()
    per_rank = run_ranks(bench_rank, args.nranks, sizes, args.dtype, timeout=400)
    rows = per_rank[0]
    for r in rows:
        for k, v in r.items():
            if isinstance(v, str):
                print(f"{_fmt_bytes(r['bytes'])} {k}: {v}")
    write_rank_rows(
        args.out,
        per_rank,
        nranks=args.nranks,
        dtype=args.dtype,
        ops_per_graph=OPS_PER_GRAPH,
        replays=REPLAYS,
    )
    print(
        f"\nall_gather / reduce_scatter / all_to_all {args.dtype}, {args.nranks} GPUs, us per op "
        f"(CUDA graph of {OPS_PER_GRAPH}, median of {REPLAYS} replays; ratio = rcclx / NCCL), "
        f"{time.monotonic() - t0:.0f} s:"
    )
    print(table(rows, args.nranks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
