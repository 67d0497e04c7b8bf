"""Where a run's buffers live: host memory or GPUs (``--device``), which GPU each rank uses, and
the environment every rank sets before anything touches CUDA.

Nothing here initialises CUDA: the command line asks ctran (which needs no driver call to say
whether the build has GPU code) and imports torch only to read its build's CUDA version, so the
fork server the ranks come from stays free of CUDA state.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os

import ctran

# The GPU machines require NVLink multicast off (NCCL's NVLS, torch symmetric memory's and
# NVSHMEM's multicast objects): every rank sets these before NCCL, torch or NVSHMEM reads them.
MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def disable_multicast() -> None:
    os.environ.update(MULTICAST_OFF)


@dataclasses.dataclass(frozen=True)
class DeviceChoice:
    """The resolved ``--device``: ``kind`` "cpu" or "cuda", the GPUs this host has for the run,
    and ``reason``, what the header says about the choice."""

    kind: str
    ngpus: int
    reason: str


def gpu_unavailable() -> tuple[int, str | None]:
    """(usable GPUs, None) when a run on GPUs can start here, else (0, why not)."""
    count, why = ctran.cuda_device_count()
    if not ctran.built_with_cuda():
        return 0, why or "this build has no GPU code"
    if count <= 0:
        return 0, why or "no usable GPU"
    if importlib.util.find_spec("torch") is None:
        return 0, "GPU buffers are torch tensors, and torch is not installed"
    import torch  # reads the build's CUDA version only: no CUDA call

    if torch.version.cuda is None:
        return 0, f"torch {torch.__version__} is built without CUDA"
    return count, None


def _torch_cuda() -> str:
    import torch

    return f"torch {torch.__version__}, CUDA {torch.version.cuda}"


def choose_device(requested: str) -> DeviceChoice:
    """Resolves --device {auto,cpu,cuda}; raises ValueError (the message names the option) when
    cuda was asked for and cannot run."""
    if requested == "cpu":
        return DeviceChoice("cpu", 0, "--device cpu")
    count, why = gpu_unavailable()
    if why is not None:
        if requested == "cuda":
            raise ValueError(f"--device cuda: {why}")
        return DeviceChoice("cpu", 0, f"auto: {why}")
    plural = "s" if count != 1 else ""
    how = "--device cuda" if requested == "cuda" else "auto"
    return DeviceChoice("cuda", count, f"{how}: {count} GPU{plural}, {_torch_cuda()}")


def gpu_for_rank(rank: int, ngpus: int) -> int:
    """Rank r runs on GPU r % ngpus (more ranks than GPUs share them: for correctness runs)."""
    return rank % max(1, ngpus)


def sharing(comm) -> str:
    """The header's line on ranks sharing GPUs: the launch bound the communicator agreed on and
    whether MPS runs their kernels at once."""
    from rcclx_core import _testing
    from rcclx_core.perf import mps

    return f"{_testing.gpu_sharing(comm)}; {mps.describe()}"


def torchrun_gpu(ngpus: int) -> tuple[int, bool]:
    """Under torchrun: this process's GPU (LOCAL_RANK % GPUs) and whether ranks share GPUs."""
    local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    local_size = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    return gpu_for_rank(local_rank, ngpus), local_size > ngpus
