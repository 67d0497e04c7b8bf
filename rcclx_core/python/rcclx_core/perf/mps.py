"""NVIDIA MPS for ranks that share a GPU: whether a control daemon serves this process's
environment, and a daemon of our own for a run (``rcclx-perf --mps``, ``nox -s gpu``).

Without MPS the kernels of processes sharing a GPU take turns in time slices: a kernel waiting on
a peer waits out the peer's slice, and a 1 KiB all_reduce takes milliseconds. Under MPS they run
at once. A client finds its daemon through CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps);
our daemon gets pipe and log folders of its own, and the environment of the processes started
after it points there. The GPU's compute mode is never changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

CONTROL = "nvidia-cuda-mps-control"
# Where the NVIDIA container images put the driver's tools when they are not on PATH.
_CONTROL_DIRS = ("/usr/local/nvidia/bin", "/usr/bin")
_DEFAULT_PIPE_DIR = "/tmp/nvidia-mps"
_START_TIMEOUT_S = 10.0


def control_binary() -> str | None:
    """The MPS control program, or None where the driver has none."""
    found = shutil.which(CONTROL)
    if found:
        return found
    for folder in _CONTROL_DIRS:
        path = os.path.join(folder, CONTROL)
        if os.access(path, os.X_OK):
            return path
    return None


def pipe_dir(env=None) -> str:
    env = os.environ if env is None else env
    return env.get("CUDA_MPS_PIPE_DIRECTORY") or _DEFAULT_PIPE_DIR


def active(env=None) -> bool:
    """Whether a control daemon listens where a process with ``env`` would look for one."""
    return os.path.exists(os.path.join(pipe_dir(env), "control"))


def describe(env=None) -> str:
    """One phrase for headers: MPS on (and the thread percentage) or off."""
    env = os.environ if env is None else env
    if not active(env):
        return "MPS off: the ranks' kernels take turns in time slices (slow; times mean little)"
    share = env.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")
    limit = f", CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={share}" if share else ", no SM limit"
    return f"MPS on ({pipe_dir(env)}{limit}): the ranks' kernels run at once"


_PROBE = "import ctran, sys; sys.exit(0 if ctran.cuda_device_count()[0] > 0 else 1)"


def wait_ready(timeout_s: float = 30.0) -> bool:
    """Whether a new process can use the GPU, asked of fresh processes until one can or
    ``timeout_s`` passes. After a client dies mid-kernel (a fault test, a killed rank) the MPS
    server recovers for a while, and a process starting then fails CUDA's initialisation
    ("MPS server is not ready", error 807) for good."""
    deadline = time.monotonic() + timeout_s
    while True:
        if subprocess.run([sys.executable, "-c", _PROBE], check=False).returncode == 0:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


class Daemon:
    """An MPS control daemon for this process and its children, started by ``start`` and
    stopped (with its server) by ``stop``; a context manager. ``start`` raises RuntimeError
    naming why when the driver has no MPS or the daemon does not come up."""

    def __init__(self, root: str | None = None):
        self._root = root
        self._dir: str | None = None
        self._saved: dict[str, str | None] = {}
        self._control: str | None = None

    def start(self) -> Daemon:
        control = control_binary()
        if control is None:
            raise RuntimeError(f"MPS: no {CONTROL} on PATH or in {', '.join(_CONTROL_DIRS)}")
        self._dir = tempfile.mkdtemp(prefix="rcclx-mps-", dir=self._root)
        env = {
            "CUDA_MPS_PIPE_DIRECTORY": os.path.join(self._dir, "pipe"),
            "CUDA_MPS_LOG_DIRECTORY": os.path.join(self._dir, "log"),
        }
        for path in env.values():
            os.makedirs(path)
        self._saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        self._control = control
        subprocess.run([control, "-d"], check=True, env=os.environ.copy())
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not active():
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"MPS: the daemon did not open {pipe_dir()} in time")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self._control is not None and active():
            subprocess.run(
                [self._control], input=b"quit\n", env=os.environ.copy(), check=False, timeout=30
            )
            deadline = time.monotonic() + _START_TIMEOUT_S
            while active() and time.monotonic() < deadline:
                time.sleep(0.05)
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved, self._control = {}, None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> Daemon:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
