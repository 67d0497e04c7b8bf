"""rcclx_core.perf.mps: whether an MPS daemon serves an environment, and a daemon of a run's own
(``rcclx-perf --mps``, ``nox -s gpu``) that is started with folders of its own and always
stopped. The daemon here is a stand-in control program (these machines have no GPU driver):
these tests check our side of it (where it looks, the environment it sets and restores, what
it leaves behind); tests/gpu/test_gpu_mps.py runs under the real one."""

from __future__ import annotations

import os
import stat

import pytest

from rcclx_core.perf import mps

# Opens the control pipe on -d and removes it on "quit", as nvidia-cuda-mps-control does; notes
# each call (its arguments or its command) in $STAND_IN_CALLS.
_STAND_IN = """#!/bin/sh
if [ "$1" = "-d" ]; then
  echo "-d $CUDA_MPS_PIPE_DIRECTORY" >> "$STAND_IN_CALLS"; touch "$CUDA_MPS_PIPE_DIRECTORY/control"
  exit 0
fi
read line; echo "$line" >> "$STAND_IN_CALLS"
[ "$line" = quit ] && rm -f "$CUDA_MPS_PIPE_DIRECTORY/control"
"""


@pytest.fixture
def stand_in_control(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / mps.CONTROL
    program.write_text(_STAND_IN)
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STAND_IN_CALLS", str(tmp_path / "calls"))
    monkeypatch.delenv("CUDA_MPS_PIPE_DIRECTORY", raising=False)
    monkeypatch.delenv("CUDA_MPS_LOG_DIRECTORY", raising=False)
    return program


def test_active_looks_for_the_control_pipe_where_a_client_would(tmp_path):
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}
    assert not mps.active(env)
    assert mps.describe(env).startswith("MPS off: the ranks' kernels take turns")
    (tmp_path / "control").touch()
    assert mps.active(env)
    assert mps.describe(env) == f"MPS on ({tmp_path}, no SM limit): the ranks' kernels run at once"
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = "50"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50" in mps.describe(env)
    assert mps.pipe_dir({}) == "/tmp/nvidia-mps"


def test_a_daemon_of_our_own_is_started_in_its_folders_and_stopped(tmp_path, stand_in_control):
    assert mps.control_binary() == str(stand_in_control)
    with mps.Daemon(root=str(tmp_path)):
        pipe = os.environ["CUDA_MPS_PIPE_DIRECTORY"]
        assert pipe.startswith(str(tmp_path)) and mps.active()
        assert os.path.isdir(os.environ["CUDA_MPS_LOG_DIRECTORY"])
    # started in its own pipe folder, stopped with "quit", the environment as it was, the
    # folders gone
    assert (tmp_path / "calls").read_text().splitlines() == [f"-d {pipe}", "quit"]
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ
    assert "CUDA_MPS_LOG_DIRECTORY" not in os.environ
    assert not os.path.exists(pipe)


def test_a_daemon_is_stopped_even_when_the_run_fails(tmp_path, stand_in_control):
    seen = {}
    with pytest.raises(RuntimeError, match="the run failed"):
        with mps.Daemon(root=str(tmp_path)):
            seen["pipe"] = os.environ["CUDA_MPS_PIPE_DIRECTORY"]
            raise RuntimeError("the run failed")
    assert not os.path.exists(seen["pipe"])
    assert "CUDA_MPS_PIPE_DIRECTORY" not in os.environ


def test_no_control_program_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(mps, "_CONTROL_DIRS", (str(tmp_path),))
    assert mps.control_binary() is None
    with pytest.raises(RuntimeError, match="MPS: no nvidia-cuda-mps-control"):
        mps.Daemon().start()
