"""All-reduce through torchcomms' backend "rcclx", one process per rank.

Run: torchrun --standalone --nproc-per-node 2 docs/examples/torchcomms_all_reduce.py
"""

import torch
import torchcomms

comm = torchcomms.new_comm("rcclx", torch.device("cpu"), name="quick_start")
rank, size = comm.get_rank(), comm.get_size()

t = torch.full((4,), float(rank + 1))
comm.all_reduce(t, torchcomms.ReduceOp.SUM, async_op=False)  # 1 + 2 + ... + size everywhere
print(f"torchcomms rank {rank} of {size}: all_reduce sum = {t.tolist()}")

comm.finalize()
