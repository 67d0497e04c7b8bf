"""``nox -s wheels_test``'s parts: the C program compiled against the rcclx-nccl wheel, fresh
environments, and the sdists built and checked from their files alone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nox

from . import sources
from .common import ROOT, find_python
from .wheels import WheelVariant

# `nox -s wheels_test`: CPU-only wheels of this checkout for WHEELS_TEST_PYTHON, installed into
# a fresh virtual environment that can reach no compiler, CMake or nvcc (pip install --no-index),
# where tests/wheels/check_installed.py runs collectives through each layer; then the sdists of
# WHEELS_TEST_SDISTS built and installed into another, from those files alone.
WHEELS_TEST_PYTHON = "3.11"

WHEELS_TEST_DIR = ROOT / "build" / "wheels-test"

WHEELS_TEST_DEPENDENCIES = ("numpy", "torch")

WHEELS_TEST_INSTALL = ("rcclx_core", "nccl_compat", "torchcomms_rcclx", "torchcomms_standin")

# The C program run as ranks on the installed libnccl.so.2 (compiled before the install).
WHEELS_TEST_PROGRAM = ROOT / "tests" / "nccl_compat" / "c" / "collectives.c"

WHEELS_TEST_SCRIPT = ROOT / "tests" / "wheels" / "check_installed.py"

# The sdists pip builds in the check (CPU-only), and what their isolated builds need besides.
WHEELS_TEST_SDISTS = ("ctran", "rcclx_core")

WHEELS_TEST_SDIST_BUILD = ("scikit-build-core>=0.10", "pybind11>=2.12")


def fresh_venv(session: nox.Session, version: str, name: str) -> Path:
    venv = WHEELS_TEST_DIR / name
    shutil.rmtree(venv, ignore_errors=True)
    session.run(find_python(version), "-m", "venv", str(venv), external=True)
    return venv


def check_sdists(session: nox.Session, version: str, dist: Path, deps: Path) -> None:
    """pip builds WHEELS_TEST_SDISTS from their sdist files in `dist` (CPU-only, each in its own
    isolated environment from the files in `deps`: no index, no checkout) into a fresh virtual
    environment, where an all_reduce runs over two processes."""
    normalized = sources.normalized
    variant = WheelVariant(None)
    sdists = []
    for name in WHEELS_TEST_SDISTS:
        found = sorted(dist.glob(f"{normalized(variant.distribution(name))}-*.tar.gz"))
        if not found:
            session.error(f"no sdist of {name} in {dist}")
        sdists.append(str(found[-1]))
    venv = fresh_venv(session, version, "venv-sdists")
    # Outside the checkout, so that nothing of it can be found by accident.
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "PIP_CONFIG_FILE": os.devnull,
        "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
    }
    with session.chdir(venv):
        session.run(
            str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-cache-dir",
            "--find-links", str(deps), "--config-settings=cmake.define.RCCLX_WITH_CUDA=OFF",
            *sdists,
            env=env, external=True,
        )  # fmt: skip
        session.run(
            str(venv / "bin" / "python"), str(WHEELS_TEST_SCRIPT), "--from-sdists",
            env=env, external=True,
        )  # fmt: skip


def compile_against_wheel(session: nox.Session, dist: Path, variant: WheelVariant) -> Path:
    """WHEELS_TEST_PROGRAM compiled now (a compiler is still reachable here) against the
    nccl.h and libnccl.so.2 inside the rcclx-nccl wheel in `dist`."""
    import zipfile

    normalized = sources.normalized(variant.distribution("nccl_compat"))
    wheel = next(dist.glob(f"{normalized}-*.whl"))
    unpacked = WHEELS_TEST_DIR / "nccl-wheel"
    shutil.rmtree(unpacked, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    lib = unpacked / "rcclx_nccl" / "lib"
    program = WHEELS_TEST_DIR / WHEELS_TEST_PROGRAM.stem
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    session.run(
        cc, "-std=c11", "-O1", "-pthread", f"-I{unpacked / 'rcclx_nccl' / 'include'}",
        f"-I{WHEELS_TEST_PROGRAM.parent}", "-o", str(program), str(WHEELS_TEST_PROGRAM),
        f"-L{lib}", "-l:libnccl.so.2", "-lm", external=True,
    )  # fmt: skip
    return program
