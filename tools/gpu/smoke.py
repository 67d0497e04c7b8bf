"""Step-by-step smoke test of one rank of a 2-rank GPU communicator, printing each step, for
diagnosing crashes (run one process per rank; rank 0 may run under cuda-gdb):

    python3 tools/gpu/smoke.py RANK UID_FILE [torch|cupy]
"""

import faulthandler
import os
import sys
import time

faulthandler.enable()
rank, uid_file, lib = int(sys.argv[1]), sys.argv[2], sys.argv[3]
os.environ.update({"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"})


def log(*a):
    print(f"[rank {rank} {lib}]", *a, flush=True)


if lib == "torch":
    import torch

    torch.cuda.set_device(rank)
    log("torch", torch.__version__)
else:
    import cupy

    cupy.cuda.Device(rank).use()
    log("cupy", cupy.__version__)
import rcclx_core as rc  # noqa: E402

log("imported rcclx_core")
if rank == 0:
    uid = rc.create_unique_id()
    with open(uid_file + ".tmp", "wb") as f:
        f.write(uid)
    os.rename(uid_file + ".tmp", uid_file)
else:
    while not os.path.exists(uid_file):
        time.sleep(0.05)
    uid = open(uid_file, "rb").read()
comm = rc.Communicator.from_unique_id(uid, rank, 2, device=rank)
log("communicator created, device", comm.device)
for algo in ("dda_flat", "dda_tree", "dda_large"):
    if lib == "torch":
        x = torch.full((100003,), float(rank + 1), device="cuda")
        comm.all_reduce(x, algo=algo, stream=torch.cuda.current_stream().cuda_stream)
        log(algo, "enqueued")
        torch.cuda.synchronize()
        log(algo, "result", x[:2].tolist(), x[-1].item(), "(want 3.0)")
    else:
        x = cupy.full((100003,), float(rank + 1), dtype=cupy.float32)
        comm.all_reduce(x, algo=algo, stream=cupy.cuda.get_current_stream().ptr)
        log(algo, "enqueued")
        cupy.cuda.Device().synchronize()
        log(algo, "result", float(x[0]), float(x[-1]), "(want 3.0)")
comm.destroy()
log("destroyed")
