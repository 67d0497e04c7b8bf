"""``nox -s hip``'s parts: hipcc (from Debian when missing) and the checks that the AMD build
compiled every GPU source for every target."""

from __future__ import annotations

import shutil

import nox

from .common import ROOT, apt_install, can_apt_install, native_sources

# The AMD build check (`nox -s hip`): CDNA2 (MI200), 64-wide wavefronts, no FP8 conversion
# hardware; what the GPU code must compile for besides NVIDIA's GPUs.
HIP_ARCHITECTURES = "gfx90a"

HIP_BUILD_DIR = ROOT / "build" / "hip"

HIP_LIBRARIES = ("ctran", "rcclx_core")


def ensure_hipcc(session: nox.Session) -> str:
    """The hipcc to use; installs Debian's hipcc package when missing (as root on Debian)."""
    found = shutil.which("hipcc") or shutil.which("hipcc", path="/opt/rocm/bin")
    if found:
        return found
    if not can_apt_install():
        session.error(
            "hipcc not found. On Debian 12 or newer, run this session as root (it installs the "
            "`hipcc` package) or `apt-get install --no-install-recommends hipcc` yourself; "
            "elsewhere install ROCm's hipcc and put it on PATH"
        )
    apt_install(session, ("hipcc",), "hipcc not found", "(clang, ROCm device libs)")
    found = shutil.which("hipcc")
    if not found:
        session.error("apt-get installed hipcc, but no hipcc is on PATH")
    return found


def check_no_cuda_guards(session: nox.Session) -> None:
    """Fails on GPU code guarded by RCCLX_HAVE_CUDA (in C++ or CMake), which the HIP build
    would silently leave out; RCCLX_HAVE_GPU is the guard for code of both vendors."""
    parts = ("ctran", "rcclx_core", "nccl_compat")
    names = [n for n in native_sources() if n.split("/")[0] in parts]
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


def check_hip_objects(session: nox.Session) -> None:
    """Every .cu file of the libraries was compiled, and each one defining kernels holds code
    for every HIP target (a file CMake does not list, or lists only for CUDA, fails here)."""
    problems = []
    sources = [
        name
        for name in native_sources()
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
