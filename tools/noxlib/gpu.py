"""``nox -s gpu``'s parts: the GPUs this machine shows, the session's environment, MPS, and the
probe that fails a build without usable GPU code."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

from .common import ROOT

# What a GPU machine's own Python must already hold for `nox -s gpu` (it installs nothing
# from an index: such machines are often offline).
GPU_PREINSTALLED = ("torch", "numpy", "pytest", "pytest_timeout", "scikit_build_core", "pybind11")

# Multicast over NVLink stays off for every GPU program these sessions start.
NVLINK_MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def visible_gpus() -> list[str]:
    """The NVIDIA GPUs this machine shows (`nvidia-smi -L`); empty without a driver."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in listed.splitlines() if line.startswith("GPU ")]


def mps_module():
    """rcclx_core.perf.mps from the checkout (standard library only: no build needed)."""
    path = ROOT / "rcclx_core" / "python" / "rcclx_core" / "perf" / "mps.py"
    spec = importlib.util.spec_from_file_location("rcclx_perf_mps", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Fails the gpu session early when the build left the GPU code out (nvcc not found, say).
GPU_BUILD_PROBE = (
    "import ctran, sys; n, why = ctran.cuda_device_count(); "
    "print('built with GPU code:', ctran.built_with_cuda(), '- GPUs:', n, why or ''); "
    "sys.exit(0 if ctran.built_with_cuda() and n > 0 else 'no usable GPU code in the build')"
)


def gpu_session_env() -> dict[str, str]:
    """The gpu session's environment: its install folder first on the paths, nvcc found where
    CUDA installs it, every core building, multicast off, in-kernel waits bounded."""
    site = ROOT / ".nox" / "gpu" / "site"
    path = os.environ.get("PATH", "")
    if shutil.which("nvcc") is None and Path("/usr/local/cuda/bin/nvcc").is_file():
        path = f"/usr/local/cuda/bin{os.pathsep}{path}"
    # The pure-Python torch layer is imported from the checkout: it needs no build, and the
    # hatchling that would install it is often missing on such machines. Such machines have no
    # torchcomms either: the stand-in's folder comes last, as its .pth file would put it.
    python_path = os.pathsep.join(
        p
        for p in (
            str(site),
            str(ROOT / "torchcomms_rcclx"),
            str(ROOT / "benchmarks"),
            os.environ.get("PYTHONPATH"),
            str(ROOT / "torchcomms_standin" / "rcclx_torchcomms_standin"),
        )
        if p
    )
    return {
        **NVLINK_MULTICAST_OFF,
        "PYTHONPATH": python_path,
        "PATH": f"{site / 'bin'}{os.pathsep}{path}",
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
        "RCCLX_CUDA_ARCHITECTURES": os.environ.get("RCCLX_CUDA_ARCHITECTURES", "90"),
        "RCCLX_TIMEOUT_MS": os.environ.get("RCCLX_TIMEOUT_MS", "20000"),
        "PYTHONUNBUFFERED": "1",
    }
