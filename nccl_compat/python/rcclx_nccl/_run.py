"""``rcclx-run [options] [--] CMD ...``: runs a program on RCCLX's libnccl.so.2 instead of NCCL.

A PyTorch wheel's ``libtorch_cuda.so`` finds ``libnccl.so.2`` through an RPATH into the
``nvidia-nccl`` wheel, which ``LD_LIBRARY_PATH`` cannot override; a library in ``LD_PRELOAD`` is
loaded first and its ``nccl*`` symbols are the ones every later library binds to. So the
command runs with our library preloaded, first on ``LD_LIBRARY_PATH`` (for programs that
``dlopen("libnccl.so.2")``, such as CuPy) and named by ``VLLM_NCCL_SO_PATH`` (vLLM's pynccl).
``NCCL_*`` variables pass through unchanged (``NCCL_DEBUG`` sets the library's log level,
``NCCL_COMM_ID`` its bootstrap address).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from rcclx_nccl import library_dir, library_path

__all__ = ["main", "run_environment"]


def _prepend(value: str, old: str | None, sep: str) -> str:
    parts = [value] + [p for p in (old or "").split(sep) if p and p != value]
    return sep.join(parts)


def run_environment(base: dict[str, str] | None = None, name: str = "nccl") -> dict[str, str]:
    """A copy of ``base`` (default: os.environ) under which programs use our library:
    LD_PRELOAD, LD_LIBRARY_PATH and VLLM_NCCL_SO_PATH set, everything else (NCCL_*) kept."""
    env = dict(os.environ if base is None else base)
    lib = str(library_path(name))
    # ld.so splits LD_PRELOAD on spaces and colons.
    env["LD_PRELOAD"] = _prepend(lib, env.get("LD_PRELOAD"), ":")
    env["LD_LIBRARY_PATH"] = _prepend(str(library_dir()), env.get("LD_LIBRARY_PATH"), os.pathsep)
    env["VLLM_NCCL_SO_PATH"] = lib
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="rcclx-run",
        description="Run CMD with RCCLX's libnccl.so.2 in place of NCCL (LD_PRELOAD).",
    )
    parser.add_argument(
        "--rccl", action="store_true", help="preload librccl.so.1 instead of libnccl.so.2"
    )
    parser.add_argument(
        "--print-env",
        action="store_true",
        help="print the variables set (shell syntax) and exit, running nothing",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    env = run_environment(name="rccl" if args.rccl else "nccl")
    if args.print_env:
        for key in ("LD_PRELOAD", "LD_LIBRARY_PATH", "VLLM_NCCL_SO_PATH"):
            print(f"export {key}={shlex.quote(env[key])}")
        return 0
    if not command:
        parser.error("no command given (usage: rcclx-run [--] CMD ...)")
    try:
        os.execvpe(command[0], command, env)
    except OSError as e:
        print(f"rcclx-run: cannot run {command[0]!r}: {e.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced the process


if __name__ == "__main__":
    sys.exit(main())
