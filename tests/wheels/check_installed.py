"""Checks the wheels installed in this Python's environment, with no build tool reachable
(``nox -s wheels_test`` runs it in a fresh virtual environment whose PATH holds only its own bin
folder): every package imports from site-packages, an all_reduce runs over two processes on host
memory, a C program built beforehand runs two ranks on the installed libnccl.so.2, and
torch.distributed's "rcclx" backend all-reduces over two processes.

Usage: python check_installed.py PROGRAM [--expect-gpu-code]  (PROGRAM:
tests/nccl_compat/c/collectives.c, compiled against the wheel's nccl.h and libnccl.so.2;
--expect-gpu-code: the wheels hold the GPU code, which must not stop them on this machine)

       python check_installed.py --from-sdists  (rcclx-ctran and rcclx-core alone, as pip built
them from their sdists, CPU-only: both import from this environment, and the all_reduce runs)
"""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import subprocess
import sys
from pathlib import Path

NRANKS = 2
BUILD_TOOLS = ("cc", "gcc", "c++", "g++", "clang", "nvcc", "cmake", "ninja", "make")
os.environ.setdefault("RCCLX_BOOTSTRAP_ADDR", "127.0.0.1")
os.environ.setdefault("RCCLX_TIMEOUT_MS", "30000")


def check_no_build_tools() -> None:
    found = {name: shutil.which(name) for name in BUILD_TOOLS if shutil.which(name)}
    assert not found, f"build tools reachable: {found}"
    for variable in ("CC", "CXX", "CUDACXX"):
        assert os.environ.get(variable, "false") == "false", f"{variable} names a compiler"


def check_installed_here(expect_gpu_code: bool, modules=("rcclx_nccl", "torchcomms_rcclx")) -> None:
    """ctran, rcclx_core and `modules` are imported from this environment, never from a
    checkout; the build has the GPU code when `expect_gpu_code`."""
    import importlib

    import ctran

    for name in ("ctran", "rcclx_core", *modules):
        module = importlib.import_module(name)
        where = Path(module.__file__).resolve()
        assert Path(sys.prefix).resolve() in where.parents, f"{module.__name__} from {where}"
    print("built with the GPU code:", ctran.built_with_cuda(), "- GPUs:", ctran.cuda_device_count())
    assert ctran.built_with_cuda() == expect_gpu_code, "the wheels' GPU code is not as expected"


def _core_rank(unique_id: bytes, rank: int, queue) -> None:
    import numpy as np

    import rcclx_core

    comm = rcclx_core.Communicator.from_unique_id(unique_id, rank, NRANKS)
    data = np.arange(1001, dtype=np.float32) * (rank + 1)
    out = np.empty_like(data)
    comm.all_reduce(data, out)
    queue.put((rank, out.tolist()))


def _torch_rank(port: int, rank: int, queue) -> None:
    import torch
    import torch.distributed as dist

    import torchcomms_rcclx.c10d  # noqa: F401 - registers "rcclx"

    store = dist.TCPStore("127.0.0.1", port, is_master=False)
    dist.init_process_group("rcclx", store=store, rank=rank, world_size=NRANKS)
    tensor = torch.full((513,), float(rank + 1))
    dist.all_reduce(tensor)
    queue.put((rank, tensor.tolist()))
    dist.destroy_process_group()


def run_ranks(target, first_argument) -> dict[int, list]:
    """`target(first_argument, rank, queue)` as NRANKS spawned processes; their results."""
    context = mp.get_context("spawn")
    queue = context.Queue()
    procs = [context.Process(target=target, args=(first_argument, r, queue)) for r in range(NRANKS)]
    for p in procs:
        p.start()
    results = dict(queue.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0, f"{target.__name__}: a rank exited {p.exitcode}"
    return results


def check_core_all_reduce() -> None:
    import rcclx_core

    results = run_ranks(_core_rank, rcclx_core.create_unique_id())
    expected = [float(i * sum(range(1, NRANKS + 1))) for i in range(1001)]
    assert all(results[r] == expected for r in range(NRANKS)), "rcclx_core all_reduce: wrong sum"
    print(f"rcclx_core: all_reduce over {NRANKS} processes on host memory: ok")


def check_nccl_program(program: str) -> None:
    import rcclx_nccl
    from rcclx_core._testing import free_port_run

    library = rcclx_nccl.library_path("nccl").resolve()
    assert Path(sys.prefix).resolve() in library.parents, f"libnccl.so.2 at {library}"
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(library.parent),
        "RCCLX_NCCL_HOST_ONLY": "1",
        "NCCL_COMM_ID": f"127.0.0.1:{free_port_run(1)}",
    }
    procs = [
        subprocess.Popen(
            [program, str(r), str(NRANKS)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(NRANKS)
    ]
    for r, p in enumerate(procs):
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, f"{Path(program).name} rank {r} exited {p.returncode}:\n{out}"
    print(f"libnccl.so.2 ({library}): {Path(program).name}, {NRANKS} ranks: ok")


def check_torch_all_reduce() -> None:
    import torch.distributed as dist

    # The store lives here, in the parent, until every rank has left.
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
    results = run_ranks(_torch_rank, server.port)
    expected = float(sum(range(1, NRANKS + 1)))
    assert all(v == expected for r in range(NRANKS) for v in results[r]), "torch: wrong sum"
    print(f'torch.distributed "rcclx": all_reduce over {NRANKS} processes: ok')


def main() -> None:
    if sys.argv[1:] == ["--from-sdists"]:
        check_installed_here(False, modules=())
        check_core_all_reduce()
        print("rcclx-ctran and rcclx-core built from their sdists work")
        return
    check_no_build_tools()
    check_installed_here("--expect-gpu-code" in sys.argv[2:])
    check_core_all_reduce()
    check_nccl_program(sys.argv[1])
    check_torch_all_reduce()
    print("the installed wheels work with no build tool reachable")


if __name__ == "__main__":
    main()
