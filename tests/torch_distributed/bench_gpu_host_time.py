"""Host time per eager GPU all_reduce through each layer, in one run on one GPU (1 rank): the
core's own Python call, the torchcomms communicator, ``dist.all_reduce`` on an "rcclx" group,
on an "nccl" group and on a group that does nothing. The host time is what a loop of calls
costs the CPU per call (nothing waits for the GPU inside the loop); end to end adds the wait for
the GPU after the loop.

    python tests/torch_distributed/bench_gpu_host_time.py [--bytes 1K] [--calls 200] [--blocks 40]

"dist nothing" is a Python process group whose all_reduce returns at once: torch's own cost of
reaching any Python backend. The five are timed in alternating blocks of ``--calls`` calls (a
load on the machine falls on all of them alike); each figure is the median over the blocks, in
microseconds per call.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bytes", default="1K")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=40)
    args = parser.parse_args()
    units = {"K": 1 << 10, "M": 1 << 20}
    text = args.bytes
    nbytes = int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)

    import torch
    import torch.distributed as dist

    import torchcomms_rcclx
    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    class DoneWork(dist.Work):
        def wait(self, timeout=None):
            return True

        def is_completed(self):
            return True

    class NothingGroup(dist.ProcessGroup):
        """torch's own cost of a call into a Python process group: one that does nothing."""

        def __init__(self, *args):
            super().__init__(0, 1)
            self._done = DoneWork()

        def allreduce(self, tensors, opts=None):
            return self._done

    dist.Backend.register_backend("nothing", NothingGroup, devices=["cuda"])
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    os.environ.update(TORCHCOMM_RANK="0", TORCHCOMM_SIZE="1")
    torch.cuda.set_device(0)
    dist.init_process_group("cpu:rcclx,cuda:rcclx", rank=0, world_size=1)
    nccl = dist.new_group(backend="nccl")
    nothing = dist.new_group(backend="nothing")
    tc = torchcomms_rcclx.new_comm("rcclx", torch.device("cuda"), "bench", store=dist.HashStore())
    core = tc._core
    t = torch.zeros(nbytes // 4, device="cuda")
    stream_of = torch._C._cuda_getCurrentRawStream
    calls = {
        "core": lambda: core.all_reduce(t, None, 0, None, None, False, None, stream_of(0)),
        "torchcomms_rcclx": lambda: tc.all_reduce(t),
        "dist rcclx": lambda: dist.all_reduce(t),
        "dist nccl": lambda: dist.all_reduce(t, group=nccl),
        "dist nothing": lambda: dist.all_reduce(t, group=nothing),
    }
    host = {k: [] for k in calls}
    end = {k: [] for k in calls}
    for f in calls.values():  # warm up every path
        for _ in range(args.calls):
            f()
    torch.cuda.synchronize()
    for _ in range(args.blocks):
        for name, f in calls.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(args.calls):
                f()
            enqueued = time.perf_counter()
            torch.cuda.synchronize()
            done = time.perf_counter()
            host[name].append((enqueued - start) / args.calls * 1e6)
            end[name].append((done - start) / args.calls * 1e6)
    med = {k: statistics.median(v) for k, v in host.items()}
    med_end = {k: statistics.median(v) for k, v in end.items()}
    print(f"all_reduce of {nbytes} bytes on {torch.cuda.get_device_name(0)}, 1 rank, "
          f"{args.blocks} blocks of {args.calls} calls; median us per call")  # fmt: skip
    for name in calls:
        print(f"  {name:18s} host {med[name]:7.2f} us   end to end {med_end[name]:7.2f} us")
    print(
        f"  dist rcclx - dist nothing (this backend's own cost inside torch.distributed): "
        f"host {med['dist rcclx'] - med['dist nothing']:+.2f} us"
    )
    for name in ("torchcomms_rcclx", "dist rcclx"):
        print(
            f"  {name} - core: host {med[name] - med['core']:+.2f} us; "
            f"{name} / dist nccl: host {med[name] / med['dist nccl']:.2f}x, "
            f"end to end {med_end[name] / med_end['dist nccl']:.2f}x"
        )
    tc.finalize()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
