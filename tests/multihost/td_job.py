"""A torch.distributed job on the "rcclx" backend, as torchrun starts it on every host
(test_multihost_launch.py): ``python -m torch.distributed.run --nnodes 2 --node-rank H
--nproc-per-node 2 --master-addr ADDR --master-port PORT td_job.py OUTDIR``.

Each worker joins with ``init_process_group("rcclx")`` (torchrun's environment), runs an
all_reduce, an all_gather and a broadcast, and writes what it saw and got to
``OUTDIR/rank-RANK.json``.
"""

from __future__ import annotations

import json
import os
import socket
import sys

import torch
import torch.distributed as dist

import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"


def main(outdir: str) -> None:
    dist.init_process_group("rcclx")
    rank, size = dist.get_rank(), dist.get_world_size()
    x = torch.full((1000,), float(rank + 1))
    dist.all_reduce(x)
    gathered = [torch.empty(3, dtype=torch.int64) for _ in range(size)]
    dist.all_gather(gathered, torch.tensor([rank, int(os.environ["LOCAL_RANK"]), os.getpid()]))
    b = torch.arange(5, dtype=torch.float64) * (rank + 7)
    dist.broadcast(b, src=size - 1)
    dist.barrier()
    record = {
        "rank": rank,
        "size": size,
        "env": {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK")},
        "hostname": socket.gethostname(),
        "all_reduce": sorted(set(x.tolist())),
        "all_gather": [g.tolist()[:2] for g in gathered],
        "broadcast": b.tolist(),
    }
    dist.destroy_process_group()
    with open(os.path.join(outdir, f"rank-{rank}.json"), "w") as f:
        json.dump(record, f)


if __name__ == "__main__":
    main(sys.argv[1])
