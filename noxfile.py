"""Sessions that build, test, lint, document and benchmark RCCLX (`nox -l` lists them).

Every session installs the packages it needs into its own virtual environment under .nox/ from
this checkout: ctran, rcclx_core and nccl_compat are native (scikit-build-core; each configures
the one top-level CMake project, builds what it ships and installs only its own targets),
torchcomms_rcclx, torchcomms_standin (the stand-in `torchcomms` module) and benchmarks (the
workloads and benchmarks) are pure Python.
Versions that must not drift (torch, the formatters) are pinned in constraints.txt.
The sessions are defined here; what they are made of (the wheel machinery, the GPU and HIP
checks, the repository's layout) lives in tools/noxlib.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))  # noxlib

from noxlib.common import (  # noqa: E402
    BUILD_REQUIREMENTS,
    CONSTRAINTS,
    NATIVE_PACKAGES,
    NATIVE_PACKAGES_IN_ORDER,
    PACKAGES,
    ROOT,
    apt_install,
    available,
    find_python,
    native_sources,
)
from noxlib.gpu import (  # noqa: E402
    GPU_BUILD_PROBE,
    GPU_PREINSTALLED,
    gpu_session_env,
    mps_module,
    visible_gpus,
)
from noxlib.hip import (  # noqa: E402
    HIP_ARCHITECTURES,
    HIP_BUILD_DIR,
    HIP_LIBRARIES,
    check_hip_objects,
    check_no_cuda_guards,
    ensure_hipcc,
)
from noxlib.wheels import (  # noqa: E402
    DEFAULT_CUDA,
    WHEEL_PYTHONS,
    add_cuda_options,
    build_wheels,
    native_distributions_in,
    wheel_variant,
)
from noxlib.wheels_test import (  # noqa: E402
    WHEELS_TEST_DEPENDENCIES,
    WHEELS_TEST_DIR,
    WHEELS_TEST_INSTALL,
    WHEELS_TEST_PYTHON,
    WHEELS_TEST_SCRIPT,
    WHEELS_TEST_SDIST_BUILD,
    check_sdists,
    compile_against_wheel,
    fresh_venv,
)

nox.options.default_venv_backend = "venv"
nox.options.reuse_venv = "yes"
nox.options.error_on_external_run = True
nox.options.sessions = ["lint", "tests"]


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


def _prepare_build(session: nox.Session) -> None:
    """Installs the build backends (and cmake / ninja where the machine has none)."""
    session.env.setdefault(
        "CMAKE_BUILD_PARALLEL_LEVEL", os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    )
    tools = [name for name in ("cmake", "ninja") if shutil.which(name) is None]
    session.install(*CONSTRAINTS, *BUILD_REQUIREMENTS, *tools)


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
        if name not in available(session, (name,)):
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
        "clang-format": ["clang-format", "--dry-run", "-Werror", *native_sources()],
    }
    failed = []
    for name, command in checks.items():  # run every check, so one pass shows every problem
        try:
            session.run(*command)
        except nox.command.CommandFailed:
            failed.append(name)
    if failed:
        session.error("failed: " + ", ".join(failed))


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
        apt_install(session, BROWSER_PACKAGES, "RCCLX_DOCS_BROWSER=required, Chromium not found")
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
    for name in available(session, PACKAGES):
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


def _wheel_options(session: nox.Session) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="nox -s wheels --")
    parser.add_argument("--python", default=",".join(WHEEL_PYTHONS), help="e.g. 3.11,3.12")
    parser.add_argument("--cpu-only", action="store_true", help="leave the GPU code out")
    add_cuda_options(parser)
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


@nox.session
def wheels_test(session: nox.Session) -> None:
    """Build CPU-only cp311 wheels; install them with no compiler reachable; run collectives.

    Then pip builds rcclx-ctran and rcclx-core from their sdists alone (no checkout, no index)
    and an all_reduce runs on them. ``-- --cuda-architectures 90`` builds the wheels with the GPU
    code instead (slow: minutes of nvcc), which must then load and run the host collectives where
    no GPU driver is (``--cuda 12`` too: the NAME-cu12 wheels); ``--no-sdists`` skips the sdists."""
    parser = argparse.ArgumentParser(prog="nox -s wheels_test --")
    parser.add_argument("--cuda-architectures", default=None)
    add_cuda_options(parser)
    parser.add_argument("--no-sdists", action="store_true", help="skip the sdists' check")
    options = parser.parse_args(session.posargs)
    started = time.monotonic()
    dist = WHEELS_TEST_DIR / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    # WHEELS_TEST_PYTHON where the machine has it, else the Python running nox.
    version = WHEELS_TEST_PYTHON
    if find_python(version) is None:
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
    program = compile_against_wheel(session, dist, variant)
    venv = fresh_venv(session, version, "venv")
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
        check_sdists(session, version, dist, deps)
        times["sdists: build, install and check"] = time.monotonic() - from_sdists
    for step, seconds in times.items():
        session.log(f"{step}: {seconds:.0f} s")
    session.log(f"wheels_test passed in {time.monotonic() - started:.0f} s")


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
    env = gpu_session_env()
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
            *native_distributions_in(session, Path(wheels_dir)), env=env, external=True,
        )  # fmt: skip
    else:
        # The same pip build as the other sessions, into a folder of this session's own, so the
        # machine's Python and its packages (torch) stay as they were.
        natives = [f"./{n}" for n in available(session, PACKAGES) if n in NATIVE_PACKAGES]
        session.run(
            sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
            "--no-index", "--target", str(site),
            f"--config-settings=build-dir={_build_dir(session)}",
            f"--config-settings=cmake.define.RCCLX_CUDA_ARCHITECTURES={env['RCCLX_CUDA_ARCHITECTURES']}",
            *natives, env=env, external=True,
        )  # fmt: skip
    session.run(sys.executable, "-c", GPU_BUILD_PROBE, env=env, external=True)
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
    mps = mps_module()
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


@nox.session
def hip(session: nox.Session) -> None:
    """Compile ctran's and rcclx_core's GPU code for AMD (hipcc, gfx90a) into their libraries."""
    hipcc = ensure_hipcc(session)
    check_no_cuda_guards(session)
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
    check_hip_objects(session)
