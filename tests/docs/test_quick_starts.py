"""The quick starts of docs/index.rst, run as written: every ``console`` block's ``$`` commands
run in bash (two ranks on this machine's CPU) and must print the lines the block shows, in any
order, and nothing else; every ``pip install ./...`` block names package folders in an order
pip can install one at a time (each after the packages of this repository it depends on)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import checks
import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "index.rst"
# Pages whose install blocks are checked (the quick starts and the installation page).
INSTALL_PAGES = (INDEX, ROOT / "docs" / "install.rst")
# The port the examples' commands name; each run gets a free one instead.
EXAMPLE_PORT = "29500"


def _blocks(path: Path, kind: str) -> list[list[str]]:
    """The bodies of the ``.. code-block:: kind`` directives of a page (options dropped)."""
    lines = path.read_text().splitlines()
    blocks = []
    for i, line in enumerate(lines):
        if line.strip() != f".. code-block:: {kind}":
            continue
        indent = len(line) - len(line.lstrip())
        body = []
        for following in lines[i + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following)
        text = [b.strip() for b in body if b.strip() and not b.strip().startswith(":")]
        blocks.append(text)
    return blocks


def _console_blocks() -> list[tuple[list[str], list[str]]]:
    """(commands, expected output lines) of each console block of the index; a command line
    ending in a backslash continues on the next line."""
    found = []
    for block in _blocks(INDEX, "console"):
        commands, output = [], []
        for line in block:
            if line.startswith("$ "):
                commands.append(line[2:])
            elif commands and commands[-1].endswith("\\"):  # a command continued
                commands[-1] += "\n" + line
            else:
                output.append(line)
        found.append((commands, output))
    return found


def _needs(commands: list[str]) -> str | None:
    """Why the commands cannot run here, or None."""
    text = " ".join(commands)
    needed = {"torchrun": "torchcomms_rcclx", "rcclx-run": "rcclx_nccl", "rcclx_core": "rcclx_core"}
    for word, module in needed.items():
        if word in text:
            try:
                __import__(module)
            except ImportError:
                return f"{module} is not installed"
    if re.search(r"(^|\s)cc\s", text) and shutil.which("cc") is None:
        return "no C compiler (cc)"
    return None


def test_the_index_has_the_three_quick_starts():
    commands = [" ".join(c) for c, _ in _console_blocks()]
    assert len(commands) == 3, commands
    assert "torchrun" in commands[0] and "rcclx-run" in commands[1]
    assert "core_all_reduce.py" in commands[2]
    # The example each quick start runs is the one it shows.
    included = set(re.findall(r"\.\. literalinclude:: (\S+)", INDEX.read_text()))
    for command in commands:
        for example in re.findall(r"docs/(examples/[\w.]+)", command):
            assert example in included, f"{example} is run but not shown"


@pytest.mark.slow
@pytest.mark.parametrize("number", range(3), ids=["pytorch", "nccl", "rcclx_core"])
def test_quick_start_runs_as_written(number, tmp_path):
    commands, expected = _console_blocks()[number]
    why = _needs(commands)
    if why:
        pytest.skip(why)
    (tmp_path / "docs").symlink_to(ROOT / "docs")  # what it writes lands in tmp_path
    # MASTER_PORT and the store's port after it, both outside the ephemeral range (a port taken
    # by binding to 0 can be a connection's local end by the time rank 0 listens on it).
    script = "\n".join(["set -e", *commands]).replace(EXAMPLE_PORT, str(checks.free_port()))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NCCL_", "MASTER_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # A rank that fails leaves its peer waiting for it: bounded well inside this test's limit,
    # so the peer fails with its own message instead of being killed silently.
    env.setdefault("RCCLX_TIMEOUT_MS", "60000")
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the ranks started in the background die with it on a timeout
    )
    try:
        stdout, stderr = process.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"timed out after 240 s; stderr:\n{stderr[-4000:]}\nstdout:\n{stdout[-2000:]}")
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr[-4000:]
    # Each expected line once, in any order; the ranks share one pipe, and a rank's line may
    # reach it in two writes (torchrun's ranks write unbuffered), so lines are found, not split.
    rest = done.stdout
    for line in expected:
        assert line in rest, f"{line!r} not printed; stdout: {done.stdout!r}"
        rest = rest.replace(line, "", 1)
    assert not rest.strip(), f"printed more than the docs show: {rest!r}"


def _in_repo_dependencies() -> dict[str, set[str]]:
    """Package folder -> the folders of this repository it depends on (by project name)."""
    projects = {}
    for pyproject in ROOT.glob("*/pyproject.toml"):
        projects[pyproject.parent.name] = tomllib.loads(pyproject.read_text())["project"]
    folder = {p["name"]: name for name, p in projects.items()}
    return {
        name: {
            folder[d]
            for d in (re.split(r"[ <>=;\[]", dep)[0] for dep in p.get("dependencies", []))
            if d in folder
        }
        for name, p in projects.items()
    }


def test_install_lines_name_real_packages_in_dependency_order():
    deps = _in_repo_dependencies()
    checked = 0
    for page in INSTALL_PAGES:
        for block in _blocks(page, "bash"):
            folders = [f for line in block for f in re.findall(r"pip install \./(\w+)", line)]
            if not folders:
                continue
            for i, name in enumerate(folders):
                assert name in deps, f"{page.name}: ./{name} is not a package of this repository"
                missing = deps[name] - set(folders[:i])
                assert not missing, f"{page.name}: ./{name} needs ./{', ./'.join(missing)} first"
            checked += 1
    assert checked >= 4  # three quick starts and the installation page
