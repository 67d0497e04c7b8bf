"""Shared by the GPU checks and benchmarks: run a function as N processes, one per rank.

`run_ranks(fn, nranks, *args, timeout=...)` spawns N fresh interpreters (CUDA needs `spawn`),
hands each a RankInfo (rank, world size, its GPU, an rcclx unique id and a free TCP port for
torch.distributed) and returns every rank's return value; any rank's exception, death or
overrun fails the whole run with every rank's traceback.

Rank r runs on GPU r % (GPUs on the machine). More ranks than GPUs is for correctness checks
only: the processes sharing a GPU time-slice it (no MPS), so each kernel that waits on a peer
of its own GPU waits for the next time slice.

The NVLink-multicast switches stay off in every child (the machines here require it).
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
import os
import socket
import time
import traceback
from typing import Any, Callable

SAFE_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
os.environ.update(SAFE_ENV)
os.environ.setdefault("PYTHONFAULTHANDLER", "1")  # a crashing rank prints its Python stack


@dataclasses.dataclass
class RankInfo:
    rank: int
    nranks: int
    unique_id: bytes
    torch_port: int
    extra_ids: tuple = ()  # more unique ids, for checks that create further communicators
    device: int = 0  # this rank's GPU: rank % GPU count

    def init_torch(self, backend: str = "nccl"):
        """Sets this rank's GPU and joins torch.distributed (for the peers' numbers)."""
        import torch
        import torch.distributed as dist

        torch.cuda.set_device(self.device)
        dist.init_process_group(
            backend,
            init_method=f"tcp://127.0.0.1:{self.torch_port}",
            rank=self.rank,
            world_size=self.nranks,
            device_id=torch.device("cuda", self.device),
        )
        return dist

    def communicator(self):
        """An rcclx communicator on this rank's GPU."""
        import rcclx_core

        return rcclx_core.Communicator.from_unique_id(
            self.unique_id, self.rank, self.nranks, device=self.device
        )


class RankFailure(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(fn, info: RankInfo, args, queue) -> None:
    os.environ.update(SAFE_ENV)
    try:
        queue.put((info.rank, "ok", fn(info, *args)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        queue.put((info.rank, "error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))


def gpu_count() -> int:
    """GPUs this process sees (0 without a CUDA build or driver)."""
    import ctran

    return ctran.cuda_device_count()[0]


def run_ranks(
    fn: Callable, nranks: int, *args, timeout: float = 300.0, extra_ids: int = 0
) -> list[Any]:
    import rcclx_core

    ngpus = max(1, gpu_count())
    uid = rcclx_core.create_unique_id()  # the store lives in this process until we return
    extra = tuple(rcclx_core.create_unique_id() for _ in range(extra_ids))
    port = _free_port()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = []
    for r in range(nranks):
        p = ctx.Process(
            target=_child,
            args=(fn, RankInfo(r, nranks, uid, port, extra, r % ngpus), args, queue),
        )
        p.start()
        procs.append(p)
    results: dict[int, tuple[str, Any]] = {}
    deadline = time.monotonic() + timeout
    while len(results) < nranks and time.monotonic() < deadline:
        try:
            rank, status, value = queue.get(timeout=0.5)
            results[rank] = (status, value)
        except Exception:  # noqa: BLE001 - queue.Empty
            dead = [r for r, p in enumerate(procs) if not p.is_alive() and r not in results]
            if dead:
                time.sleep(1.0)  # its last message may still be in flight
                while not queue.empty():
                    rank, status, value = queue.get()
                    results[rank] = (status, value)
                for r in dead:
                    results.setdefault(
                        r, ("error", f"rank {r} died with exit code {procs[r].exitcode}")
                    )
    for r, p in enumerate(procs):
        if r not in results:
            results[r] = ("error", f"rank {r} still running after {timeout:.0f} s (killed)")
        p.join(timeout=5 if results[r][0] == "ok" else 0.1)
        if p.is_alive():
            p.kill()
            p.join()
    failed = [f"--- rank {r}: {v}" for r, (s, v) in sorted(results.items()) if s != "ok"]
    if failed:
        raise RankFailure("\n".join(failed))
    return [results[r][1] for r in range(nranks)]


def combine_pair(torch, op: str, a, b):
    """a op b element-wise, for the checks' references (op by name; AVG and PREMUL_SUM add)."""
    if op in ("SUM", "AVG", "PREMUL_SUM"):
        return a + b
    if op == "PROD":
        return a * b
    if op == "MAX":
        return torch.maximum(a, b)
    if op == "MIN":
        return torch.minimum(a, b)
    if op == "BAND":
        return torch.bitwise_and(a, b)
    if op == "BOR":
        return torch.bitwise_or(a, b)
    if op == "BXOR":
        return torch.bitwise_xor(a, b)
    raise ValueError(f"no reference for op {op}")


def write_rank_rows(path: str, per_rank: list, **meta) -> None:
    """Writes a benchmark's per-rank rows with its settings as JSON (nothing when path is "")."""
    if path:
        with open(path, "w") as fh:
            json.dump({**meta, "rank_rows": per_rank}, fh, indent=1)
