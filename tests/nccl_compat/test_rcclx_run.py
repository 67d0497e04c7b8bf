"""``rcclx-run``: programs run under it use our libnccl.so.2, even one whose RPATH points at
another libnccl.so.2 (as PyTorch wheels point at the nvidia-nccl wheel's), and see
VLLM_NCCL_SO_PATH and their NCCL_* variables."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nccl_programs import compiler

import rcclx_nccl


def _launcher() -> list[str]:
    script = Path(sys.executable).parent / "rcclx-run"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-m", "rcclx_nccl._run"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*_launcher(), *args], capture_output=True, text=True, timeout=60, env=env
    )


def test_the_launcher_script_is_installed():
    assert (Path(sys.executable).parent / "rcclx-run").is_file() or shutil.which("rcclx-run")


@pytest.mark.parametrize("name", ["nccl", "rccl"])
def test_command_runs_with_our_library_loaded(name):
    flags = ["--rccl"] if name == "rccl" else []
    run = _run(*flags, "--", "cat", "/proc/self/maps")
    assert run.returncode == 0, run.stderr
    assert str(rcclx_nccl.library_path(name).resolve()) in run.stdout


def test_environment_names_the_library_and_keeps_nccl_variables(monkeypatch):
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("NCCL_COMM_ID", "127.0.0.1:1234")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/libother.so")
    run = _run("env")
    assert run.returncode == 0, run.stderr
    env = dict(line.split("=", 1) for line in run.stdout.splitlines() if "=" in line)
    lib = str(rcclx_nccl.library_path())
    assert env["VLLM_NCCL_SO_PATH"] == lib
    assert env["LD_PRELOAD"] == f"{lib}:/nonexistent/libother.so"
    assert env["LD_LIBRARY_PATH"].split(":")[0] == str(rcclx_nccl.library_dir())
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_COMM_ID"] == "127.0.0.1:1234"
    printed = _run("--print-env")
    assert printed.returncode == 0 and f"export VLLM_NCCL_SO_PATH={lib}" in printed.stdout


def test_missing_command_is_an_error():
    run = _run()
    assert run.returncode == 2 and "no command given" in run.stderr
    run = _run("--", "/nonexistent/program")
    assert run.returncode == 127 and "cannot run" in run.stderr


def test_preload_wins_over_an_rpath_to_another_libnccl(tmp_path):
    # A stand-in for NVIDIA's library, found by the program through its RPATH only.
    other = tmp_path / "other"
    other.mkdir()
    (tmp_path / "fake.c").write_text("int ncclGetVersion(int* v) { *v = 12345; return 0; }\n")
    subprocess.run(
        [compiler(), "-shared", "-fPIC", "-Wl,-soname,libnccl.so.2", "-o",
         str(other / "libnccl.so.2"), str(tmp_path / "fake.c")],
        check=True,
    )  # fmt: skip
    (tmp_path / "prog.c").write_text(
        "#include <stdio.h>\n#include <nccl.h>\n"
        'int main(void) { int v = 0; ncclGetVersion(&v); printf("%d\\n", v); return 0; }\n'
    )
    exe = tmp_path / "prog"
    subprocess.run(
        [compiler(), "-o", str(exe), str(tmp_path / "prog.c"), f"-I{rcclx_nccl.include_dir()}",
         f"-L{other}", "-l:libnccl.so.2", f"-Wl,-rpath,{other}", "-Wl,--disable-new-dtags"],
        check=True,
    )  # fmt: skip
    plain = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert plain.stdout.strip() == "12345"  # the RPATH's library, as for a torch wheel
    ours = _run(str(exe))
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.strip() == str(rcclx_nccl.get_version())
