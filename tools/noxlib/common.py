"""What every session shares: where the repository is, its packages in dependency order, the
pins, the build backends, the checkout's native sources, interpreters and Debian packages."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parents[2]

CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))

# Dependency order: each package depends only on packages before it. "benchmarks" (the
# workloads and benchmarks, rcclx-benchmarks) stands beside the product, never inside it.
PACKAGES = (
    "ctran",
    "rcclx_core",
    "nccl_compat",
    "torchcomms_rcclx",
    "torchcomms_standin",
    "benchmarks",
)

NATIVE_PACKAGES = frozenset({"ctran", "rcclx_core", "nccl_compat"})

NATIVE_PACKAGES_IN_ORDER = tuple(name for name in PACKAGES if name in NATIVE_PACKAGES)

# Build backends, installed once per session so builds skip pip's isolated environments.
BUILD_REQUIREMENTS = ("scikit-build-core>=0.10", "pybind11>=2.12", "hatchling>=1.18")

NATIVE_SOURCE_SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".cc", ".cu", ".cuh")


def available(session: nox.Session, names: tuple[str, ...]) -> list[str]:
    """The packages among `names` that exist in this checkout, warning about the others."""
    present = []
    for name in names:
        if (ROOT / name / "pyproject.toml").is_file():
            present.append(name)
        else:
            session.warn(f"skipping {name}: {name}/pyproject.toml does not exist yet")
    return present


def native_sources() -> list[str]:
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


def find_python(version: str) -> str | None:
    """CPython `version`'s interpreter: pyenv's (PYENV_ROOT), else python<version> on PATH."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(
        versions.glob(f"{version}.*/bin/python{version}"),
        key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()],
    )
    if installed:
        return str(installed[-1])
    return shutil.which(f"python{version}")


def can_apt_install() -> bool:
    """Whether this session can install Debian packages: Debian's apt-get, run as root."""
    debian = Path("/etc/debian_version").is_file() and shutil.which("apt-get") is not None
    return debian and os.geteuid() == 0


def apt_install(session: nox.Session, packages: tuple[str, ...], why: str, what: str = "") -> None:
    """Installs Debian's `packages` (without recommended packages), or fails saying how to."""
    names = " ".join(packages)
    if not can_apt_install():
        session.error(
            f"{why}: run this session as root on Debian 12 or newer (it installs {names}) or "
            f"`apt-get install --no-install-recommends {names}` yourself"
        )
    session.log(f"{why}: installing Debian's {names} {what}".rstrip())
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", env=env, external=True)
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    session.run(*install, env=env, external=True)
