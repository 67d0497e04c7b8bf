"""rcclx-overlap's refusals on any machine: arguments it cannot use and a machine without a GPU
are named before any rank starts (the GPU run itself is tests/gpu/test_gpu_across_hosts.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")


def _run(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "rcclx_benchmarks.overlap", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--ranks", "1"), "--ranks must be at least 2, got 1"),
        (("--calls", "0"), "--calls must be at least 1, got 0"),
        (("--bytes", "6"), "--bytes must be a multiple of 4 (float32), got 6"),
    ],
)
def test_bad_arguments_are_named(args, message):
    proc = _run(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_machine_without_a_gpu_is_told_so():
    proc = _run("--bytes", "4K")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "needs a CUDA GPU" in proc.stderr
