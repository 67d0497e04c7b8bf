"""What the GPU test modules share: skip the whole module unless this machine has enough GPUs
(and torch), and reach the device check scripts in tools/gpu, whose checks the tests run."""

from __future__ import annotations

import os
import sys

import pytest

TOOLS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "gpu")


def require_gpus(count: int) -> None:
    """Skips the calling module (at import) unless `count` GPUs and torch are usable; then puts
    tools/gpu on the import path."""
    ctran = pytest.importorskip("ctran")
    have, why = ctran.cuda_device_count()
    if have < count:
        pytest.skip(f"needs {count} GPUs: {why or f'{have} found'}", allow_module_level=True)
    pytest.importorskip("torch")
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
