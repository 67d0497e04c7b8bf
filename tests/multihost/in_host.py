"""What runs inside a test host (see hosts.py): the host's first process and its rank server.

``python in_host.py init HOSTNAME`` is PID 1 of a host's new PID namespace (started by
``unshare``): it mounts the host's own ``/sys`` (a sysfs of the host's network namespace, so
``/sys/class/net`` lists the host's interfaces and their counters) and a private tmpfs on
``/dev/shm``, sets the hostname, brings ``lo`` up, prints ``ready``, then reaps the orphans that
are reparented to it until it is killed (the namespace dies with it).

``python in_host.py serve`` is the host's rank server (entered into every namespace of the
host by ``nsenter``), the multi-host counterpart of the launcher's fork server: it imports the
modules ranks need once (and those RCCLX_TEST_HOST_PRELOAD names, comma-separated), then for
each line ``JOBDIR RANK`` on its stdin forks a rank, answers ``RANK PID`` (the PID as the host
sees it), and when the rank exits writes its exit code to
``JOBDIR/exit-RANK``. A rank runs ``fn(ctx, *args)`` from ``JOBDIR/job.pkl`` with the context
and environment of ``JOBDIR/ctx-RANK.pkl``, its output going to ``JOBDIR/rank-RANK.log``, and
writes a launcher.RankResult to ``JOBDIR/result-RANK.pkl``. The server exits at the end of its
stdin; it and its ranks die with the process that started them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

PRELOAD = ("numpy", "pytest", "ctran", "rcclx_core", "launcher", "checks", "rcclx_helpers")


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def init(hostname: str) -> None:
    for argv in (
        ["mount", "-t", "sysfs", "sysfs", "/sys"],
        ["mount", "-t", "tmpfs", "-o", "mode=1777,size=512m", "tmpfs", "/dev/shm"],
        ["ip", "link", "set", "lo", "up"],
    ):
        subprocess.run(argv, check=True, timeout=10)
    import socket

    socket.sethostname(hostname)
    print("ready", flush=True)
    os.close(1)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        signal.sigtimedwait({signal.SIGCHLD}, 1.0)


def _rank(jobdir: str, r: int) -> None:
    """The forked rank: never returns."""
    code = 0
    try:
        _die_with_parent()
        if os.getppid() == 1:  # the server is gone already
            os._exit(3)
        log = os.open(os.path.join(jobdir, f"rank-{r}.log"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        import pickle
        import time
        import traceback

        from launcher import RankResult, stack_dump_on_signal

        stack_dump_on_signal()
        with open(os.path.join(jobdir, f"ctx-{r}.pkl"), "rb") as f:
            ctx, env = pickle.load(f)
        os.environ.clear()
        os.environ.update(env)
        try:
            with open(os.path.join(jobdir, "job.pkl"), "rb") as f:
                fn, args = pickle.load(f)
            result = RankResult(r, value=fn(ctx, *args))
        except BaseException as e:  # noqa: BLE001 - reported to the launching process
            result = RankResult(
                r, error_type=type(e).__name__, error=str(e), traceback=traceback.format_exc()
            )
        path = os.path.join(jobdir, f"result-{r}.pkl")
        tmp = f"{path}.{time.monotonic_ns()}.tmp"
        with open(tmp, "wb") as f:
            pickle.dump(result, f)
        os.rename(tmp, path)
    except BaseException:  # noqa: BLE001 - the exit code says it
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    import importlib
    import selectors
    import time

    _die_with_parent()
    extra = [m for m in os.environ.get("RCCLX_TEST_HOST_PRELOAD", "").split(",") if m]
    for name in PRELOAD + tuple(extra):
        importlib.import_module(name)
    running: dict[int, tuple[str, int]] = {}
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    print("ready", flush=True)
    open_input = True
    while open_input or running:
        if open_input and sel.select(timeout=0.01):
            line = sys.stdin.readline()
            if not line:
                open_input = False
                sel.unregister(sys.stdin)
            else:
                jobdir, r = line.split()
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    _rank(jobdir, int(r))
                running[pid] = (jobdir, int(r))
                print(f"{r} {pid}", flush=True)
        elif not open_input:
            time.sleep(0.01)
        while running:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            jobdir, r = running.pop(pid)
            try:
                with open(os.path.join(jobdir, f"exit-{r}"), "w") as f:
                    f.write(str(os.waitstatus_to_exitcode(status)))
            except FileNotFoundError:  # a rank killed by the launching process, which left
                pass


if __name__ == "__main__":
    if sys.argv[1] == "init":
        init(sys.argv[2])
    elif sys.argv[1] == "serve":
        serve()
    else:
        raise SystemExit(f"in_host.py: unknown command {sys.argv[1]!r}")
