"""rcclx-host-time: host time per eager all_reduce through each layer of RCCLX, one rank, in one
run, next to a backend that does nothing behind the same layer (the floor that layer imposes):

- ``core``: rcclx_core's own Python call;
- ``backend``: the rcclx backend called directly (``torchcomms_rcclx.new_comm``);
- ``torchcomms rcclx``: ``torchcomms.new_comm("rcclx")``, through the real torchcomms' C++
  TorchComm where torchcomms is installed (else the stand-in's TorchComm; the label says which),
  and ``torchcomms nothing``: a Python backend registered the same way whose all_reduce returns
  at once (real torchcomms only);
- ``dist rcclx``: ``dist.all_reduce`` on an "rcclx" group, and ``dist nothing``: a Python
  process group that returns at once; ``dist nccl`` (GPU) or ``dist gloo`` (CPU).

    rcclx-host-time [--device cpu|cuda] [--bytes 1K] [--calls 200] [--blocks 40]

The host time is what a loop of calls costs the CPU per call (nothing waits for a GPU inside
the loop; end to end adds that wait after it). The paths are timed in alternating blocks of
``--calls`` calls (a load on the machine falls on all of them alike); each figure is the median
over the blocks, in microseconds per call. A 1-rank in-place all_reduce moves nothing: these
compare host paths only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from rcclx_benchmarks.local_ranks import free_port


def _bytes(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def _nothing_torchcomms_backend(torchcomms):
    """A torchcomms backend whose calls return at once, registered as "rcclx_nothing"."""

    class Nothing(torchcomms.TorchCommBackend):
        def init(self, device, name, options):
            self.name = name

        def finalize(self):
            pass

        def get_rank(self):
            return 0

        def get_size(self):
            return 1

        def get_backend_name(self):
            return "rcclx_nothing"

        def get_comm_name(self):
            return self.name

        def all_reduce(self, tensor, op, async_op):
            return None

    torchcomms.register_backend("rcclx_nothing", Nothing)


def _paths(device, nbytes: int) -> dict:
    """Every path's argument-less call, and what releases them."""
    import torch
    import torch.distributed as dist
    import torchcomms

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

    gpu = device.type == "cuda"
    dist.Backend.register_backend("nothing", NothingGroup, devices=[device.type])
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    os.environ.update(TORCHCOMM_RANK="0", TORCHCOMM_SIZE="1", RANK="0", WORLD_SIZE="1")
    if gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("cpu:rcclx,cuda:rcclx" if gpu else "cpu:rcclx", rank=0, world_size=1)
    peer = "nccl" if gpu else "gloo"
    peer_group = dist.new_group(backend=peer)
    nothing = dist.new_group(backend="nothing")
    store = dist.HashStore()
    backend = torchcomms_rcclx.new_comm("rcclx", device, "backend", store=store)
    comm = torchcomms.new_comm("rcclx", device, "torchcomms", store=store)
    real = getattr(torchcomms, "STANDIN", None) is None
    core = backend.get_core()
    t = torch.zeros(nbytes // 4, device=device)
    SUM = torchcomms.ReduceOp.SUM
    if gpu:
        raw = torch._C._cuda_getCurrentRawStream
        index = device.index or 0

        def core_call():
            core.all_reduce(t, None, 0, None, None, False, None, raw(index))
    else:

        def core_call():
            core.all_reduce(t, None, 0, None, None, False, None, None)

    calls = {
        "core": core_call,
        "backend": lambda: backend.all_reduce(t),
        f"torchcomms rcclx ({'real' if real else 'stand-in'})": lambda: comm.all_reduce(
            t, SUM, False
        ),
    }
    closing = [comm.finalize, backend.finalize]
    if real:
        _nothing_torchcomms_backend(torchcomms)
        floor = torchcomms.new_comm("rcclx_nothing", device, "nothing", store=store)
        calls["torchcomms nothing"] = lambda: floor.all_reduce(t, SUM, False)
        closing.append(floor.finalize)
    calls["dist rcclx"] = lambda: dist.all_reduce(t)
    calls["dist nothing"] = lambda: dist.all_reduce(t, group=nothing)
    calls[f"dist {peer}"] = lambda: dist.all_reduce(t, group=peer_group)
    closing.append(dist.destroy_process_group)
    return calls, closing


def main() -> None:
    parser = argparse.ArgumentParser(prog="rcclx-host-time", description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--bytes", default="1K")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=40)
    args = parser.parse_args()
    import torch

    nbytes = _bytes(args.bytes)
    device = torch.device("cuda", 0) if args.device == "cuda" else torch.device("cpu")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    calls, closing = _paths(device, nbytes)
    host = {k: [] for k in calls}
    end = {k: [] for k in calls}
    for f in calls.values():  # warm up every path
        for _ in range(args.calls):
            f()
    sync()
    for _ in range(args.blocks):
        for name, f in calls.items():
            sync()
            start = time.perf_counter()
            for _ in range(args.calls):
                f()
            enqueued = time.perf_counter()
            sync()
            done = time.perf_counter()
            host[name].append((enqueued - start) / args.calls * 1e6)
            end[name].append((done - start) / args.calls * 1e6)
    where = torch.cuda.get_device_name(0) if device.type == "cuda" else "CPU"
    print(
        f"all_reduce of {nbytes} bytes on {where}, 1 rank, {args.blocks} blocks of {args.calls} "
        "calls; median us per call"
    )
    print(f"command: rcclx-host-time --device {args.device} --bytes {args.bytes} "
          f"--calls {args.calls} --blocks {args.blocks}")  # fmt: skip
    med = {k: statistics.median(v) for k, v in host.items()}
    med_end = {k: statistics.median(v) for k, v in end.items()}
    for name in calls:
        print(f"  {name:28s} host {med[name]:7.2f} us   end to end {med_end[name]:7.2f} us")
    _summary(med, device.type)
    for close in closing:
        close()


def _summary(med: dict, device: str) -> None:
    """The differences the targets are stated in (docs/torchcomms.rst)."""
    tc = next(k for k in med if k.startswith("torchcomms rcclx"))
    print(f"  backend - core: {med['backend'] - med['core']:+.2f} us")
    print(f"  {tc} - core: {med[tc] - med['core']:+.2f} us")
    if "torchcomms nothing" in med:
        print(
            f"  {tc} - torchcomms nothing (rcclx's own cost inside torchcomms): "
            f"{med[tc] - med['torchcomms nothing']:+.2f} us"
        )
    print(
        "  dist rcclx - dist nothing (rcclx's own cost inside torch.distributed): "
        f"{med['dist rcclx'] - med['dist nothing']:+.2f} us"
    )
    peer = "dist nccl" if device == "cuda" else "dist gloo"
    print(f"  dist rcclx / {peer}: {med['dist rcclx'] / med[peer]:.2f}x")


if __name__ == "__main__":
    main()
