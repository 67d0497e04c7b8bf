"""Builds the C test programs of tests/nccl_compat/c with the system C compiler, against our
nccl.h only, and runs them as ranks: one process per rank, meeting through a unique id made
here (hex in NCCL_TEST_ID) or through NCCL_COMM_ID."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from checks import free_port

import rcclx_nccl

C_DIR = Path(__file__).resolve().parent / "c"
LIBRARIES = {"nccl": "libnccl.so.2", "rccl": "librccl.so.1"}


@functools.cache
def _build_dir() -> Path:
    """Where this test process keeps the programs it built (removed when it exits)."""
    path = Path(tempfile.mkdtemp(prefix="nccl_programs_"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler (cc) on this machine")
    return cc


@functools.cache
def cuda_toolkit() -> Path:
    """The CUDA toolkit with cuda_runtime.h and libcudart: CUDA_HOME, nvcc's install, or
    /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parent.parent))
    roots.append("/usr/local/cuda")
    for root in filter(None, roots):
        if (Path(root) / "include" / "cuda_runtime.h").is_file():
            return Path(root)
    pytest.skip("no CUDA toolkit (cuda_runtime.h) to build the GPU test programs")


def build(
    source: str | Path,
    library: str = "nccl",
    flags: tuple[str, ...] = (),
    tag: str = "",
    libs: tuple[str, ...] = (),
) -> Path:
    """Compiles `source` (a file of c/, or a path) with compiler `flags` into a program linked
    to our `library` (nccl or rccl) and then `libs` (linker arguments, which must follow the
    source where the linker drops libraries not yet needed: --as-needed); cached per process."""
    src = Path(source) if Path(source).is_absolute() else C_DIR / source
    exe = _build_dir() / f"{src.stem}{tag}-{library}"
    if not exe.exists():
        lib = rcclx_nccl.library_path(library)
        command = [
            compiler(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-pthread",
            f"-I{rcclx_nccl.include_dir()}", f"-I{C_DIR}", *flags, "-o", str(exe), str(src),
            f"-L{lib.parent}", f"-l:{lib.name}", *libs, "-lm",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise AssertionError(
                f"building {src.name} failed ({' '.join(command)}):\n{done.stderr[-4000:]}"
            )
    return exe


@dataclass
class RankResult:
    rank: int
    returncode: int
    stdout: str
    stderr: str


def _loopback_unique_id() -> bytes:
    """A unique id whose store this process hosts (the library loaded through ctypes; alive
    until the process exits), advertised on the loopback address. The knob is read when the id
    is made, so it is set only meanwhile: other tests see the environment unchanged."""
    old = os.environ.get("RCCLX_BOOTSTRAP_ADDR")
    os.environ["RCCLX_BOOTSTRAP_ADDR"] = "127.0.0.1"
    try:
        return rcclx_nccl.get_unique_id()
    finally:
        if old is None:
            del os.environ["RCCLX_BOOTSTRAP_ADDR"]
        else:
            os.environ["RCCLX_BOOTSTRAP_ADDR"] = old


def rank_env(extra: dict[str, str] | None = None, comm_id: bool = False) -> dict[str, str]:
    """The ranks' environment: our library found first, host-memory communicators (also on a
    machine with GPUs), loopback bootstrap, short timeouts; then `extra`."""
    env = rcclx_nccl.environ()
    # The programs check host memory unless built for the GPU (test_gpu_nccl.py sets it to 0).
    env["RCCLX_NCCL_HOST_ONLY"] = "1"
    env.setdefault("RCCLX_BOOTSTRAP_ADDR", "127.0.0.1")
    env.setdefault("RCCLX_TIMEOUT_MS", "30000")
    env.pop("NCCL_COMM_ID", None)
    if comm_id:
        env["NCCL_COMM_ID"] = f"127.0.0.1:{free_port()}"
    else:
        env["NCCL_TEST_ID"] = _loopback_unique_id().hex()
    env.update(extra or {})
    return env


def run_ranks(
    exe: Path,
    nranks: int,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    timeout: float = 120,
    launched: int | None = None,
) -> list[RankResult]:
    """Runs ranks 0..`launched`-1 (default all) of `nranks` as processes; returns each one's
    exit status and output. Processes still running at `timeout` are killed."""
    env = env if env is not None else rank_env()
    procs = [
        subprocess.Popen(
            [str(exe), str(r), str(nranks), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for r in range(nranks if launched is None else launched)
    ]
    results = []
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, err = p.communicate()
            err += f"\n(killed after {timeout} s)"
        results.append(RankResult(r, p.returncode, out, err))
    return results


def check_ranks(results: list[RankResult]) -> None:
    """Every rank exited 0; otherwise shows each failing rank's output."""
    bad = [r for r in results if r.returncode != 0]
    assert not bad, "\n".join(
        f"--- rank {r.rank} exited {r.returncode}\n{r.stdout}\n{r.stderr[-6000:]}" for r in bad
    )


def check_ranks_passed(results: list[RankResult]) -> None:
    """check_ranks, and every rank printed its "rank R: passed (0 failures)" line."""
    check_ranks(results)
    for r in results:
        assert f"rank {r.rank}: passed (0 failures)" in r.stdout, r.stderr[-2000:]
