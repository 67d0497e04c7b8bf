"""dist.all_reduce through "rcclx" against "gloo" (and the core's own call underneath), CPU,
in one run: the median time per call of float32 all_reduce at each size, over many calls, the
three timed in alternating blocks (a load on the machine falls on all three alike).

    python tests/torch_distributed/bench_all_reduce.py [--ranks 2] [--sizes 4K,16M]

Starts the ranks itself (env:// rendezvous on a free local port); rank 0 prints one line per
size and backend, and the ratio gloo / rcclx.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _medians_us(calls: dict, iters: int, warmup: int, sync, block: int = 50) -> dict:
    """The median time of each call in `calls`, in microseconds, timed in alternating blocks of
    `block` calls (each after `sync`), so that a load on the machine falls on all of them alike
    while no call is timed right after another backend's."""
    times = {name: [] for name in calls}
    for call in calls.values():
        for _ in range(warmup):
            call()
    for start in range(0, iters, block):
        for name, call in calls.items():
            call()  # first call after another backend's: not timed
            for _ in range(min(block, iters - start)):
                sync()
                t0 = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) * 1e6 for name, ts in times.items()}


def _rank_main(args) -> None:
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rcclx = dist.new_group(backend="rcclx")
    gloo = dist.new_group(backend="gloo")
    core = rcclx.communicator  # the rcclx_core Communicator under the group

    def sync():
        core.barrier()

    for text in args.sizes.split(","):
        nbytes = _bytes(text)
        t = torch.ones(nbytes // 4)
        iters = max(40, min(2000, (64 << 20) // max(nbytes, 1) // 4))
        warmup = max(5, iters // 10)
        rows = _medians_us(
            {
                "rcclx": lambda t=t: dist.all_reduce(t, group=rcclx),
                "gloo": lambda t=t: dist.all_reduce(t, group=gloo),
                "core": lambda t=t: core.all_reduce(t),
            },
            iters,
            warmup,
            sync,
        )
        if dist.get_rank() == 0:
            print(
                f"{text:>5} x{iters:<5} rcclx {rows['rcclx']:9.1f} us  gloo {rows['gloo']:9.1f} us"
                f"  core {rows['core']:9.1f} us  gloo/rcclx {rows['gloo'] / rows['rcclx']:6.1f}x"
                f"  rcclx-core {rows['rcclx'] - rows['core']:6.1f} us",
                flush=True,
            )
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default="4K,16M")
    args = parser.parse_args()
    if "RANK" in os.environ:
        _rank_main(args)
        return
    from torchcomms_rcclx.local_ranks import run_local_ranks

    sys.exit(run_local_ranks([sys.executable, __file__, *sys.argv[1:]], args.ranks))


if __name__ == "__main__":
    main()
