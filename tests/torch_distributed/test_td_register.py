"""How "rcclx" gets registered: ``import torchcomms_rcclx.c10d`` registers it; ``import
torchcomms_rcclx`` does too once torch.distributed is imported, and touches nothing of torch
when it is not."""

import importlib.util
import subprocess
import sys

import pytest

if importlib.util.find_spec("torch") is None:
    pytest.skip("torch is not installed", allow_module_level=True)


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_registration():
    probe = "import sys, torch.distributed as d; print('RCCLX' in d.Backend._plugins)"
    assert _run("import torchcomms_rcclx.c10d as c; " + probe + "; print(c.REGISTERED)") == (
        "True\nTrue"
    )
    assert _run("import torch; import torchcomms_rcclx; " + probe) == "True"
    assert _run("import sys, torchcomms_rcclx; print('torch' in sys.modules)") == "False"
