"""All-reduce through the torch.distributed backend "rcclx", one process per rank.

Run: torchrun --standalone --nproc-per-node 2 docs/examples/dist_all_reduce.py
"""

import torch
import torch.distributed as dist

import torchcomms_rcclx.c10d  # noqa: F401  (registers the backend "rcclx")

dist.init_process_group("rcclx")
rank, size = dist.get_rank(), dist.get_world_size()

t = torch.full((4,), float(rank + 1))
dist.all_reduce(t)  # sum over the ranks
print(f"torch.distributed rank {rank} of {size}: all_reduce sum = {t.tolist()}")

dist.destroy_process_group()
