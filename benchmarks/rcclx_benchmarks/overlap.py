"""rcclx-overlap: does an all_reduce on GPU tensors across hosts run behind compute? Each rank is
a pretend host of its own (RCCLX_HOST_ID), so every call goes through pinned host memory and the
host back-end; the ranks may share one GPU (run them under NVIDIA MPS so their kernels run at
once). Per rank, in one run:

- ``all_reduce``: ``--calls`` all_reduces of ``--bytes`` on a stream of their own;
- ``matmul``: bf16 matmuls on the default stream, as many as take about as long as the
  all_reduces (timed first);
- ``together``: both enqueued at once, the all_reduces first.

Rank 0 prints the medians over ``--rounds`` rounds (milliseconds) and ``together / (all_reduce +
matmul)``: 1.0 when nothing overlaps, max / sum when everything does.

    rcclx-overlap [--bytes 64M] [--calls 4] [--rounds 5] [--ranks 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

from rcclx_benchmarks.local_ranks import run_local_ranks

MATMUL_N = 4096  # a bf16 matmul of this size takes about a millisecond on a current GPU


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _rank(args: argparse.Namespace) -> None:
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    rank = int(os.environ["RANK"])
    os.environ["RCCLX_HOST_ID"] = f"rcclx-overlap-host-{rank}"
    device = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
    dist.init_process_group("cpu:rcclx,cuda:rcclx")  # env:// rendezvous
    comm_stream = torch.cuda.Stream(device)
    data = torch.ones(args.bytes // 4, device=device)
    a = torch.randn(MATMUL_N, MATMUL_N, device=device, dtype=torch.bfloat16)
    b = torch.randn(MATMUL_N, MATMUL_N, device=device, dtype=torch.bfloat16)

    def all_reduces() -> None:
        with torch.cuda.stream(comm_stream):
            for _ in range(args.calls):
                dist.all_reduce(data)

    def matmuls(count: int) -> None:
        for _ in range(count):
            torch.mm(a, b)

    def timed(fn) -> float:
        dist.barrier()
        torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize(device)
        return (time.perf_counter() - start) * 1e3

    all_reduces()  # warm-up: staging, connections
    timed(lambda: matmuls(4))
    ar_ms = statistics.median(timed(all_reduces) for _ in range(3))
    one_mm_ms = statistics.median(timed(lambda: matmuls(8)) for _ in range(3)) / 8
    count = max(1, round(ar_ms / one_mm_ms))

    rows = {"all_reduce": [], "matmul": [], "together": []}
    for _ in range(args.rounds):
        rows["all_reduce"].append(timed(all_reduces))
        rows["matmul"].append(timed(lambda: matmuls(count)))
        rows["together"].append(timed(lambda: (all_reduces(), matmuls(count))))
    data.fill_(1.0)  # the timed calls compound; one more call checks the path's result
    with torch.cuda.stream(comm_stream):
        comm_stream.wait_stream(torch.cuda.current_stream(device))
        dist.all_reduce(data)
    torch.cuda.synchronize(device)
    nranks = int(os.environ["WORLD_SIZE"])
    if not torch.all(data == nranks):
        raise SystemExit(f"rank {rank}: all_reduce of ones gave {data[0].item()}, not {nranks}")
    if rank == 0:
        med = {k: statistics.median(v) for k, v in rows.items()}
        alone = med["all_reduce"] + med["matmul"]
        print(
            f"# rcclx-overlap --bytes {args.bytes} --calls {args.calls} --rounds {args.rounds} "
            f"--ranks {os.environ['WORLD_SIZE']}: {args.calls} all_reduce of {args.bytes} bytes, "
            f"{count} matmuls of {MATMUL_N}x{MATMUL_N} bf16, one pretend host per rank, on "
            f"{torch.cuda.get_device_name(device)}"
        )
        for k, v in med.items():
            print(f"{k:>12} {v:9.2f} ms")
        print(f"{'alone, sum':>12} {alone:9.2f} ms")
        best = max(med["all_reduce"], med["matmul"]) / alone
        print(f"together / sum {med['together'] / alone:.2f} (all overlapped: {best:.2f})")
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(prog="rcclx-overlap", description=__doc__.split("\n")[0])
    parser.add_argument("--bytes", type=_bytes, default="64M", help="all_reduce size (64M)")
    parser.add_argument("--calls", type=int, default=4, help="all_reduces per measurement (4)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, medians reported (5)")
    parser.add_argument("--ranks", type=int, default=2, help="ranks, one pretend host each (2)")
    args = parser.parse_args()
    for name in ("bytes", "calls", "rounds", "ranks"):
        if getattr(args, name) < 1 or (name == "ranks" and args.ranks < 2):
            parser.error(
                f"--{name} must be at least {2 if name == 'ranks' else 1}, got "
                f"{getattr(args, name)}"
            )
    if args.bytes % 4:
        parser.error(f"--bytes must be a multiple of 4 (float32), got {args.bytes}")
    if "RANK" in os.environ:
        _rank(args)
        return
    import torch

    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU (this machine's torch sees none): it times GPU tensors")
    command = [sys.executable, "-m", "rcclx_benchmarks.overlap", *sys.argv[1:]]
    sys.exit(run_local_ranks(command, args.ranks))


if __name__ == "__main__":
    main()
