"""All-reduce with rcclx_core on numpy arrays, one process per rank (no torch needed).

The ranks meet at MASTER_ADDR:MASTER_PORT (rank 0 listens there); RANK and WORLD_SIZE say who
is who, as torchrun would set them. Run two ranks from a shell, in this folder:

  export MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=2
  RANK=0 python core_all_reduce.py & RANK=1 python core_all_reduce.py; wait
"""

import numpy as np

import rcclx_core

comm = rcclx_core.Communicator.from_env()
rank, size = comm.rank, comm.size

x = np.full(4, rank + 1, dtype=np.float32)
comm.all_reduce(x)  # in place: 1 + 2 + ... + size everywhere
print(f"rcclx_core rank {rank} of {size}: all_reduce sum = {x.tolist()}")

comm.destroy()
