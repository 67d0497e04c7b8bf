"""Sessions that build, test, lint, document and benchmark RCCLX (`nox -l` lists them).

Every session installs the packages it needs into its own virtual environment under .nox/ from
this checkout: ctran, rcclx_core and nccl_compat are native (scikit-build-core; each configures
the one top-level CMake project, builds what it ships and installs only its own targets),
torchcomms_rcclx is pure Python.
Versions that must not drift (torch, the formatters) are pinned in constraints.txt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.error_on_external_run = True
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).resolve().parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))

# Dependency order: each package depends only on packages before it.
PACKAGES = ("ctran", "rcclx_core", "nccl_compat", "torchcomms_rcclx")
NATIVE_PACKAGES = frozenset({"ctran", "rcclx_core", "nccl_compat"})
# Packages whose config_dump() feeds the knob table of the docs.
KNOB_PACKAGES = ("ctran", "rcclx_core")
# What rcclx-perf imports (its --compare gloo needs torch too).
PERF_PACKAGES = ("ctran", "rcclx_core")

# Build backends, installed once per session so builds skip pip's isolated environments.
BUILD_REQUIREMENTS = ("scikit-build-core>=0.10", "pybind11>=2.12", "hatchling>=1.18")
EDITABLE_REQUIREMENTS = ("editables",)  # hatchling's editable wheels need it
TEST_REQUIREMENTS = ("pytest>=7", "pytest-timeout>=2", "numpy", "torch")
DOCS_REQUIREMENTS = ("sphinx>=7",)
LINT_REQUIREMENTS = ("ruff", "clang-format")

NATIVE_SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cc", ".cu", ".cuh")


def _prepare_build(session: nox.Session) -> None:
    """Installs the build backends (and cmake / ninja where the machine has none)."""
    session.env.setdefault(
        "CMAKE_BUILD_PARALLEL_LEVEL", os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    )
    tools = [name for name in ("cmake", "ninja") if shutil.which(name) is None]
    session.install(*CONSTRAINTS, *BUILD_REQUIREMENTS, *tools)


def _available(session: nox.Session, names: tuple[str, ...]) -> list[str]:
    """The packages among `names` that exist in this checkout, warning about the others."""
    present = []
    for name in names:
        if (ROOT / name / "pyproject.toml").is_file():
            present.append(name)
        else:
            session.warn(f"skipping {name}: {name}/pyproject.toml does not exist yet")
    return present


def _build_dir_setting(session: nox.Session, name: str) -> list[str]:
    """A per-session CMake build directory, kept under <package>/build/ between runs."""
    if name not in NATIVE_PACKAGES:
        return []
    return [f"--config-settings=build-dir=build/nox-{session.name}-{{wheel_tag}}"]


def install_packages(
    session: nox.Session, names: tuple[str, ...] = PACKAGES, editable: bool = False
) -> list[str]:
    """Builds and installs `names` from this checkout, in order; returns those installed.

    A package whose directory has no pyproject.toml yet is skipped with a warning (so sessions
    work while a layer is being written); the packages after it are then installed without
    their dependencies, since one of those may be the skipped package.
    """
    _prepare_build(session)
    if editable:
        session.install(*CONSTRAINTS, *EDITABLE_REQUIREMENTS)
    skipped = False
    installed = []
    for name in names:
        if name not in _available(session, (name,)):
            skipped = True
            continue
        args = ["--no-build-isolation", *CONSTRAINTS, *_build_dir_setting(session, name)]
        if skipped:
            args.append("--no-deps")
        target = ["-e", f"./{name}"] if editable else [f"./{name}"]
        session.install(*args, *target)
        installed.append(name)
    return installed


@nox.session
def tests(session: nox.Session) -> None:
    """Build and install every package, then run pytest (arguments after -- go to pytest)."""
    session.install(*CONSTRAINTS, *TEST_REQUIREMENTS)
    install_packages(session)
    session.run("pytest", *(session.posargs or ["tests"]))


@nox.session
def lint(session: nox.Session) -> None:
    """Check Python with ruff (lint and format) and C++/CUDA with clang-format."""
    session.install(*CONSTRAINTS, *LINT_REQUIREMENTS)
    checks = {
        "ruff check": ["ruff", "check", "."],
        "ruff format": ["ruff", "format", "--check", "."],
        "clang-format": ["clang-format", "--dry-run", "-Werror", *_native_sources()],
    }
    failed = []
    for name, command in checks.items():  # run every check, so one pass shows every problem
        try:
            session.run(*command)
        except nox.command.CommandFailed:
            failed.append(name)
    if failed:
        session.error("failed: " + ", ".join(failed))


def _native_sources() -> list[str]:
    """C/C++/CUDA files of the checkout (tracked or new, not ignored), relative to the root."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        ignored = {"build", ".nox", ".git", "_build", "dist"}
        listed = [
            str(p.relative_to(ROOT))
            for p in ROOT.rglob("*")
            if p.is_file() and not ignored.intersection(p.relative_to(ROOT).parts)
        ]
    return sorted(f for f in listed if f.endswith(NATIVE_SOURCE_SUFFIXES) and (ROOT / f).is_file())


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML documentation into docs/_build/html, warnings as errors."""
    session.install(*CONSTRAINTS, *DOCS_REQUIREMENTS)
    install_packages(session, KNOB_PACKAGES)
    session.run(
        "sphinx-build",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "docs",
        "docs/_build/html",
        *session.posargs,
    )


@nox.session
def build(session: nox.Session) -> None:
    """Build a wheel of every package into dist/."""
    _prepare_build(session)
    for name in _available(session, PACKAGES):
        session.run(
            "python",
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            *CONSTRAINTS,
            *_build_dir_setting(session, name),
            "-w",
            "dist",
            f"./{name}",
        )
    session.log("wheels: " + ", ".join(sorted(p.name for p in (ROOT / "dist").glob("*.whl"))))


@nox.session
def dev(session: nox.Session) -> None:
    """Editable installs of every package (plus test deps) into .nox/dev for development."""
    session.install(*CONSTRAINTS, *TEST_REQUIREMENTS)
    install_packages(session, editable=True)
    session.log(
        "Python edits are live; after changing C++ run `nox -s dev` again. "
        f"Activate with: source {Path(session.virtualenv.location) / 'bin' / 'activate'}"
    )


@nox.session
def perf(session: nox.Session) -> None:
    """Run the rcclx-perf collective benchmark (default arguments: -c 1 --compare gloo)."""
    if not (ROOT / "rcclx_core" / "pyproject.toml").is_file():
        session.error("rcclx-perf is shipped by rcclx_core, which does not exist yet")
    session.install(*CONSTRAINTS, "numpy", "torch")
    install_packages(session, PERF_PACKAGES)
    session.run("rcclx-perf", *(session.posargs or ["-c", "1", "--compare", "gloo"]))
