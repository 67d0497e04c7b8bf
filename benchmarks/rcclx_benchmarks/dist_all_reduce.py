"""rcclx-dist-all-reduce: all_reduce on CPU ranks through torch's front doors of RCCLX against
torch.distributed's Gloo, in one run: ``dist.all_reduce`` on an "rcclx" group, torchcomms'
``comm.all_reduce`` on ``torchcomms.new_comm("rcclx")`` (the real torchcomms where installed,
else the stand-in), and rcclx_core's own call underneath; float32, the median time per call at
each size over many calls, the paths timed in alternating blocks (a load on the machine falls on
all of them alike).

    rcclx-dist-all-reduce [--ranks 2] [--sizes 4K,16M]

Starts the ranks itself (env:// rendezvous on a free local port); rank 0 prints one line per
size: each path's time and Gloo's time over it.
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
    import torchcomms

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rcclx = dist.new_group(backend="rcclx")
    gloo = dist.new_group(backend="gloo")
    core = rcclx.communicator  # the rcclx_core Communicator under the group
    os.environ.setdefault("TORCHCOMM_RANK", os.environ["RANK"])
    os.environ.setdefault("TORCHCOMM_SIZE", os.environ["WORLD_SIZE"])
    tc = torchcomms.new_comm(
        "rcclx", torch.device("cpu"), "bench", store=dist.distributed_c10d._get_default_store()
    )
    real = "real" if getattr(torchcomms, "STANDIN", None) is None else "stand-in"
    SUM = torchcomms.ReduceOp.SUM

    def sync():
        core.barrier()

    if dist.get_rank() == 0:
        print(
            f"all_reduce float32, {dist.get_world_size()} CPU ranks, median us per call; "
            f"torchcomms: the {real} one",
            flush=True,
        )
        print(f"command: rcclx-dist-all-reduce --ranks {args.ranks} --sizes {args.sizes}")
    for text in args.sizes.split(","):
        nbytes = _bytes(text)
        t = torch.ones(nbytes // 4)
        iters = max(40, min(2000, (64 << 20) // max(nbytes, 1) // 4))
        warmup = max(5, iters // 10)
        rows = _medians_us(
            {
                "dist rcclx": lambda t=t: dist.all_reduce(t, group=rcclx),
                "torchcomms rcclx": lambda t=t: tc.all_reduce(t, SUM, False),
                "core": lambda t=t: core.all_reduce(t),
                "dist gloo": lambda t=t: dist.all_reduce(t, group=gloo),
            },
            iters,
            warmup,
            sync,
        )
        if dist.get_rank() == 0:
            gloo_us = rows["dist gloo"]
            cells = "  ".join(
                f"{name} {us:9.1f} us ({gloo_us / us:5.1f}x)"
                for name, us in rows.items()
                if name != "dist gloo"
            )
            print(f"{text:>5} x{iters:<5} {cells}  dist gloo {gloo_us:9.1f} us", flush=True)
    dist.barrier()
    tc.finalize()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="rcclx-dist-all-reduce", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--sizes", default="4K,16M")
    args = parser.parse_args()
    if "RANK" in os.environ:
        _rank_main(args)
        return
    from rcclx_benchmarks.local_ranks import run_local_ranks

    command = [sys.executable, "-m", "rcclx_benchmarks.dist_all_reduce", *sys.argv[1:]]
    sys.exit(run_local_ranks(command, args.ranks))


if __name__ == "__main__":
    main()
