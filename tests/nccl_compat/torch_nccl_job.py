"""One rank of PyTorch's own NCCL process group (``init_process_group("nccl")``), run by
test_gpu_nccl.py under ``rcclx-run`` so that it runs on RCCLX's libnccl.so.2. Reads RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT; checks every collective against a reference and prints
``rank R: OK`` and the version of the libnccl.so.2 this process runs (torch's own
``torch.cuda.nccl.version()`` is the version of the headers torch was built against)."""

from __future__ import annotations

import ctypes
import os

import torch
import torch.distributed as dist


def loaded_nccl_version() -> int:
    """ncclGetVersion of the libnccl.so.2 already loaded in this process (dlopen of a loaded
    soname returns that library)."""
    lib = ctypes.CDLL("libnccl.so.2")
    version = ctypes.c_int(0)
    assert lib.ncclGetVersion(ctypes.byref(version)) == 0
    return version.value


def main() -> None:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    n = 4099
    mine = torch.arange(n, dtype=torch.float32, device=dev) + 1000 * rank
    everyone = [torch.arange(n, dtype=torch.float32, device=dev) + 1000 * r for r in range(world)]

    t = mine.clone()
    dist.all_reduce(t)
    torch.testing.assert_close(t, sum(everyone), rtol=0, atol=0)
    gathered = torch.empty(world * n, dtype=torch.float32, device=dev)
    dist.all_gather_into_tensor(gathered, mine)
    torch.testing.assert_close(gathered, torch.cat(everyone), rtol=0, atol=0)
    blocks = torch.cat([mine] * world)
    out = torch.empty(n, dtype=torch.float32, device=dev)
    dist.reduce_scatter_tensor(out, blocks)
    torch.testing.assert_close(out, sum(everyone), rtol=0, atol=0)
    a2a_in = torch.cat([torch.full((16,), 100.0 * rank + p, device=dev) for p in range(world)])
    a2a_out = torch.empty_like(a2a_in)
    dist.all_to_all_single(a2a_out, a2a_in)
    want = torch.cat([torch.full((16,), 100.0 * p + rank, device=dev) for p in range(world)])
    torch.testing.assert_close(a2a_out, want, rtol=0, atol=0)
    b = mine.clone() if rank == 0 else torch.zeros(n, device=dev)
    dist.broadcast(b, src=0)
    torch.testing.assert_close(b, everyone[0], rtol=0, atol=0)
    if world > 1:
        peer_to, peer_from = (rank + 1) % world, (rank - 1) % world
        got = torch.empty(n, device=dev)
        ops = [dist.P2POp(dist.isend, mine, peer_to), dist.P2POp(dist.irecv, got, peer_from)]
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        torch.testing.assert_close(got, everyone[peer_from], rtol=0, atol=0)
    torch.cuda.synchronize()
    print(f"rank {rank}: OK, libnccl version {loaded_nccl_version()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
