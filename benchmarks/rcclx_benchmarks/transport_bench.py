"""Side-by-side figures of ctran's transports between ranks of this host, in one run.

For each transport named (forced with RCCLX_TRANSPORT), two fresh processes measure:
  - signal round trip: rank 0 signals rank 1, which signals back, median of `--iters` rounds;
  - put bandwidth: rank 0 streams `--put-bytes` blocks into rank 1's window (two buffers in
    flight, each acknowledged by a signal), GB/s over `--iters` blocks;
  - a float32 all_reduce of `--allreduce-bytes` through rcclx_core (when it is installed):
    median time of `--iters` calls after warm-up.

    rcclx-transport-bench --transports tcp,ucx --put-bytes 1M,16M --allreduce-bytes 1M
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import time

SIZES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    text = text.strip().upper()
    return int(text[:-1]) * SIZES[text[-1]] if text[-1] in SIZES else int(text)


def _put_bandwidth(group, nbytes: int, iters: int) -> float:
    import numpy as np

    win = group.create_window(2 * nbytes, num_signals=2)
    src = np.ones(nbytes, dtype=np.uint8)
    group.bootstrap.barrier()
    start = time.perf_counter()
    for k in range(iters):
        if group.rank == 0:
            if k >= 2:
                win.wait_signal(1, k - 1, from_peer=1)  # buffer k % 2 is free again
            win.put(1, (k % 2) * nbytes, src)
            win.signal(1, 0)
        else:
            win.wait_signal(0, k + 1, from_peer=0)
            win.signal(0, 1)
    if group.rank == 0:
        win.wait_signal(1, iters, from_peer=1)
    seconds = time.perf_counter() - start
    group.bootstrap.barrier()
    win.destroy()
    return nbytes * iters / seconds / 1e9


def _round_trip_us(group, iters: int) -> float:
    win = group.create_window(4096, num_signals=2)
    group.bootstrap.barrier()
    times = []
    for k in range(iters):
        t = time.perf_counter()
        if group.rank == 0:
            win.signal(1, 0)
            win.wait_signal(1, k + 1, from_peer=1)
        else:
            win.wait_signal(0, k + 1, from_peer=0)
            win.signal(0, 1)
        times.append(time.perf_counter() - t)
    group.bootstrap.barrier()
    win.destroy()
    return statistics.median(times) * 1e6


def _all_reduce_us(uid: bytes, rank: int, nbytes: int, iters: int) -> float | None:
    try:
        import numpy as np

        import rcclx_core
    except ImportError:
        return None
    comm = rcclx_core.Communicator.from_unique_id(uid, rank, 2)
    x = np.ones(nbytes // 4, dtype=np.float32)
    times = []
    for k in range(iters + 5):
        t = time.perf_counter()
        comm.all_reduce(x)
        if k >= 5:
            times.append(time.perf_counter() - t)
    comm.destroy()
    return statistics.median(times) * 1e6


def _rank(uid, uid2, rank, transport, put_sizes, ar_bytes, iters, out):
    os.environ["RCCLX_TRANSPORT"] = transport
    import ctran

    group = ctran.PeerGroup.from_unique_id(uid, rank, 2)
    result = {"rtt_us": _round_trip_us(group, iters)}
    result["put"] = [(n, _put_bandwidth(group, n, iters)) for n in put_sizes]
    group.destroy()
    if ar_bytes:
        result["all_reduce_us"] = _all_reduce_us(uid2, rank, ar_bytes, iters)
    out.put((rank, result))


def run(transport: str, put_sizes: list[int], ar_bytes: int, iters: int) -> dict:
    import ctran

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    uid, uid2 = ctran.create_unique_id(), ctran.create_unique_id()
    procs = [
        ctx.Process(target=_rank, args=(uid, uid2, r, transport, put_sizes, ar_bytes, iters, out))
        for r in range(2)
    ]
    for p in procs:
        p.start()
    results = dict(out.get(timeout=600) for _ in procs)
    for p in procs:
        p.join()
    return results[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transports", default="tcp,ucx")
    parser.add_argument("--put-bytes", default="64K,1M,16M")
    parser.add_argument("--allreduce-bytes", default="1M")
    parser.add_argument("--iters", type=int, default=50)
    args = parser.parse_args()
    put_sizes = [parse_size(s) for s in args.put_bytes.split(",")]
    ar_bytes = parse_size(args.allreduce_bytes) if args.allreduce_bytes else 0
    print(f"all_reduce: float32 sum of {ar_bytes} bytes; put: GB/s by block size")
    print(f"{'transport':<10} {'round trip':>11} {'all_reduce':>11}  put GB/s")
    for transport in args.transports.split(","):
        res = run(transport, put_sizes, ar_bytes, args.iters)
        ar = res.get("all_reduce_us")
        puts = "  ".join(f"{n >> 10} KiB {gbs:.3f}" for n, gbs in res["put"])
        ar_text = f"{ar:.0f} us" if ar is not None else "-"
        print(f"{transport:<10} {res['rtt_us']:>8.0f} us {ar_text:>11}  {puts}")


if __name__ == "__main__":
    main()
