"""GPU soak: a long random mix of collectives on GPU tensors through the torch layer, every
result checked on the device, with the GPU's used memory, the process's fds and threads and the
peers' GPU memory mappings it holds sampled after a warm-up and at the end (and the mappings
again after the communicator is gone: none may stay open).

    python tests/soak/gpu_soak_run.py --ranks 2 --ops 10000 --seed 0
    python tests/soak/gpu_soak_run.py --ranks 2 --ops 2000 --pretend-hosts   # staged, across hosts

--pretend-hosts puts every rank on a host of its own (RCCLX_HOST_ID), so every call on GPU
tensors is staged through pinned host memory (docs/gpu.rst, "Across hosts"); the DDA hints are
then refused, which the soak expects.

Step i draws its choices from Random(f"{seed}/{i}") alone, so every rank draws the same calls.
A step is one all_reduce (sum, max or min, an algorithm hint or none: dda_flat, dda_tree,
dda_large), all_gather_single, reduce_scatter_single, all_to_all_single, broadcast or
alltoallv_dynamic (random counts on the device), float32 / bfloat16 / int32, 0 to 1 MiB per
buffer, async_op or not. Inputs are small integers, a function of (rank, step), so every
expected value is exact; outputs start poisoned. Used device memory is read with
cudaMemGetInfo (the whole GPU: every rank's allocations, the library's included) after the
synchronisations that end the warm-up and the run; it must not grow beyond --mem-mib.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _path in (_TESTS, _TESTS / "torchcomms_rcclx"):  # launcher; tc_helpers
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from launcher import launch, pretend_hosts  # noqa: E402

OPS = ("all_reduce",) * 4 + (
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "alltoallv_dynamic",
)
DTYPES = ("float32", "bfloat16", "int32")
ALGOS = (None, "dda_flat", "dda_tree", "dda_large")
MAX_BYTES = 1 << 20
WARMUP_FRACTION = 0.1


def _held():
    with open("/proc/self/status") as f:
        threads = next(int(line.split()[1]) for line in f if line.startswith("Threads:"))
    return len(os.listdir("/proc/self/fd")), threads


def _ipc_mappings() -> int:
    from rcclx_core import _testing

    return _testing.open_ipc_mappings()


def _values(torch, rank: int, step: int, n: int, dtype, dev):
    """Rank `rank`'s input of step `step`: small integers in [-4, 4]."""
    x = (torch.arange(n, device=dev, dtype=torch.int64) * 7 + rank * 3 + step) % 9 - 4
    return x.to(dtype)


def _step(torch, comm, rc, i: int, seed: int) -> str | None:
    """Runs step i; returns what was wrong, or None."""
    from rcclx_core import InvalidArgumentError

    rnd = random.Random(f"{seed}/{i}")
    n, me, dev = comm.get_size(), comm.get_rank(), comm.get_device()
    op = rnd.choice(OPS)
    dtype = getattr(torch, rnd.choice(DTYPES))
    per = max(0, int(2 ** rnd.uniform(0, 20)) // 4 // n)  # elements per rank block
    async_op = rnd.random() < 0.3
    mine = _values(torch, me, i, per * n, dtype, dev)
    every = [_values(torch, r, i, per * n, dtype, dev) for r in range(n)]
    if op == "all_reduce":
        kind = rnd.choice(("SUM", "MAX", "MIN"))
        algo = rnd.choice(ALGOS)
        hints = {"algo": algo} if algo else None
        stacked = torch.stack(every).to(torch.float64)
        ref = {"SUM": stacked.sum(0), "MAX": stacked.amax(0), "MIN": stacked.amin(0)}[kind]
        out, want = mine, ref.to(dtype)
        try:
            work = comm.all_reduce(out, getattr(rc.ReduceOp, kind), async_op=async_op, hints=hints)
        except InvalidArgumentError as e:  # a forced algorithm refused here, on every rank
            return None if algo and algo in str(e) else f"step {i}: all_reduce {algo}: {e}"
    elif op == "all_gather":
        out = torch.full((per * n,), 99, dtype=dtype, device=dev)
        want = torch.cat([e[:per] for e in every])
        work = comm.all_gather_single(out, mine[:per], async_op=async_op)
    elif op == "reduce_scatter":
        out = torch.full((per,), 99, dtype=dtype, device=dev)
        total = torch.stack(every).to(torch.float64).sum(0)
        want = total[me * per : (me + 1) * per].to(dtype)
        work = comm.reduce_scatter_single(out, mine, rc.ReduceOp.SUM, async_op=async_op)
    elif op == "all_to_all":
        out = torch.full((per * n,), 99, dtype=dtype, device=dev)
        want = torch.cat([e[me * per : (me + 1) * per] for e in every])
        work = comm.all_to_all_single(out, mine, async_op=async_op)
    elif op == "broadcast":
        root = rnd.randrange(n)
        out, want = mine, every[root]
        work = comm.broadcast(out, root, async_op=async_op)
    else:
        counts = [[rnd.randrange(per + 1) for _ in range(n)] for _ in range(n)]  # [src][dst]
        send = mine[: sum(counts[me])]
        want = torch.cat(
            [every[s][sum(counts[s][:me]) : sum(counts[s][: me + 1])] for s in range(n)]
        )
        out = torch.full((per * n,), 99, dtype=dtype, device=dev)
        splits = torch.tensor(counts[me], dtype=torch.int64, device=dev)
        got = torch.zeros(n, dtype=torch.int64, device=dev)
        work = comm.alltoallv_dynamic(out, send, splits, got, async_op=async_op)
        out = out[: want.numel()]
    if work is not None:  # the backend returns no Work for a synchronous host call
        work.wait()
    if not torch.equal(out, want):
        bad = int((out != want).sum())
        return f"step {i}: {op} {dtype} x{per * n}: {bad} wrong"
    return None


def _used_mib(torch, device: str) -> float:
    """The GPU's used memory (every process's), or on the host this process's RSS."""
    if device == "cuda":
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        return (total - free) / 2**20
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def soak_rank(ctx, ops: int, seed: int, warmup: int, device: str):
    import tc_helpers as H
    import torch

    import torchcomms_rcclx as rc

    if device == "cuda":
        torch.cuda.set_device(ctx.device)
    comm = H.backend_of(ctx, "gpu_soak", device=torch.device(device))
    wrong, samples, start = [], [], time.monotonic()

    def sample():
        fds, threads = _held()
        samples.append(
            {
                "used_mib": _used_mib(torch, device),
                "fds": fds,
                "threads": threads,
                "ipc": _ipc_mappings(),
            }
        )

    for i in range(ops):
        if i == warmup:
            comm.barrier()
            sample()
        problem = _step(torch, comm, rc, i, seed)
        if problem:
            wrong.append(problem)
    comm.barrier()
    sample()
    seconds = time.monotonic() - start
    comm.finalize()
    return {
        "wrong": wrong[:5],
        "n_wrong": len(wrong),
        "samples": samples,
        "seconds": seconds,
        "ipc_after": _ipc_mappings(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--ops", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="(cuda)")
    parser.add_argument(
        "--mem-mib", type=float, default=16.0, help="used GPU memory growth allowed"
    )
    parser.add_argument(
        "--pretend-hosts", action="store_true", help="every rank on a host of its own (staged)"
    )
    args = parser.parse_args(argv)
    warmup = max(1, int(args.ops * WARMUP_FRACTION))
    own_host = pretend_hosts() if args.pretend_hosts else None
    results = launch(
        soak_rank,
        args.ranks,
        args.ops,
        args.seed,
        warmup,
        args.device,
        timeout=args.timeout,
        rank_env=own_host,
    )
    print(f"command: python tests/soak/gpu_soak_run.py {' '.join(argv or sys.argv[1:])}")
    failures = []
    memory = "GPU used" if args.device == "cuda" else "RSS"
    for res in results:
        v = res.value
        s, e = v["samples"]
        grew = e["used_mib"] - s["used_mib"]
        print(
            f"rank {res.rank}: {args.ops} steps in {v['seconds']:.1f} s, {v['n_wrong']} wrong; "
            f"{memory} {s['used_mib']:.0f} -> {e['used_mib']:.0f} MiB ({grew:+.1f}); "
            f"fds {s['fds']} -> {e['fds']}, threads {s['threads']} -> {e['threads']}; "
            f"peer GPU mappings {s['ipc']} -> {e['ipc']}, {v['ipc_after']} after finalize"
        )
        failures += v["wrong"]
        if grew > args.mem_mib:
            failures.append(f"rank {res.rank}: GPU memory grew {grew:.1f} MiB")
        if e["fds"] > s["fds"] or e["threads"] > s["threads"]:
            failures.append(f"rank {res.rank}: fds or threads grew")
        if e["ipc"] > s["ipc"] or v["ipc_after"] != 0:
            failures.append(f"rank {res.rank}: peer GPU mappings grew or outlived the communicator")
    print("FAILED: " + "; ".join(failures) if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
