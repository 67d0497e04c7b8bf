"""Source trees for the wheels and sdists that ``nox -s wheels`` builds, and CUDA 12's toolkit.

- ``stage_sdist``: one native package as an sdist that builds on its own. A native package builds
  from the repository's top-level CMake project (its pyproject.toml says ``cmake.source-dir =
  ".."``), which a package folder does not hold; the staged tree does: the top-level
  CMakeLists.txt and cmake/ at its root, beside the folders of the packages it compiles (ctran for
  rcclx-ctran; ctran and rcclx_core for rcclx-core; all three for rcclx-nccl), and the package's
  pyproject.toml with its paths pointed into that tree.
- ``stage_variant``: every package with its distribution renamed NAME-SUFFIX (rcclx-core-cu12),
  and the dependencies between them too, in the repository's own layout, for the wheels of a CUDA
  variant other than the default.
- ``fetch_debian_cuda``: a CUDA toolkit assembled from Debian's packages, without installing them.

Standard library only, and nothing here runs a build: noxlib.wheels does.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The top-level CMake project, which every native package builds from.
TOP_LEVEL = ("CMakeLists.txt", "cmake")
# Each package folder's distribution name.
DISTRIBUTIONS = {
    "ctran": "rcclx-ctran",
    "rcclx_core": "rcclx-core",
    "nccl_compat": "rcclx-nccl",
    "torchcomms_rcclx": "torchcomms-rcclx",
    "torchcomms_standin": "rcclx-torchcomms-standin",
    "benchmarks": "rcclx-benchmarks",
}


def normalized(distribution: str) -> str:
    """A distribution's name as wheel and sdist file names spell it (rcclx_core_cu12)."""
    return re.sub(r"[-_.]+", "_", distribution).lower()


def source_files(paths: Iterable[str], root: Path = ROOT) -> list[str]:
    """The files under `paths` (relative to `root`) that git tracks or would track: never a build
    folder, a cache or anything else .gitignore names."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *paths],
        cwd=root, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return sorted({f for f in listed.split("\0") if f and (root / f).is_file()})


def _copy(files: Iterable[str], source: Path, target: Path) -> None:
    """Copies each file, keeping its modification time (a build folder kept between runs sees
    the same sources as before, and recompiles nothing)."""
    for name in files:
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / name, destination)


def _replace_once(text: str, old: str, new: str, where: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"{where}: expected {old!r} once, found it {text.count(old)} times")
    return text.replace(old, new)


def stage_sdist(package: str, parts: Iterable[str], target: Path, root: Path = ROOT) -> Path:
    """`package`'s sdist tree in `target` (emptied first): its pyproject.toml and README.md at
    the root with the top-level CMake project, and each folder of `parts` (the native packages it
    compiles, its own among them) without their pyproject.toml and README.md. Returns `target`."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    folders = list(parts)
    files = [
        f
        for f in source_files((*TOP_LEVEL, *folders), root)
        if not (f.count("/") == 1 and f.split("/")[1] in ("pyproject.toml", "README.md"))
    ]
    _copy(files, root, target)
    shutil.copy2(root / package / "README.md", target / "README.md")
    where = f"{package}/pyproject.toml"
    text = (root / where).read_text()
    text = _replace_once(text, 'cmake.source-dir = ".."', 'cmake.source-dir = "."', where)
    text = _replace_once(text, 'input = "../CMakeLists.txt"', 'input = "CMakeLists.txt"', where)
    text = _replace_once(text, 'wheel.packages = ["', f'wheel.packages = ["{package}/', where)
    header = (
        f"# {package}/pyproject.toml as its sdist holds it: the top-level CMake project is this\n"
        f"# folder, and {package}/ beside it.\n"
    )
    (target / "pyproject.toml").write_text(header + text)
    return target


def rename_distributions(text: str, suffix: str, where: str) -> str:
    """A pyproject.toml's text with each of the project's distribution names (its own, and
    those it requires) followed by `suffix`."""
    names = "|".join(re.escape(n) for n in sorted(DISTRIBUTIONS.values(), key=len, reverse=True))
    renamed = re.sub(rf'"({names})(?=[\s\[<>=!~;"])', rf'"\1{suffix}', text)
    if not re.search(rf'^name = "({names}){re.escape(suffix)}"$', renamed, re.MULTILINE):
        raise ValueError(f"{where}: no project name renamed")
    return renamed


def stage_variant(packages: Iterable[str], suffix: str, target: Path, root: Path = ROOT) -> Path:
    """The top-level CMake project and the folders of `packages` in `target`, in the
    repository's layout, each pyproject.toml's distributions renamed with `suffix`."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    folders = list(packages)
    _copy(source_files((*TOP_LEVEL, *folders), root), root, target)
    for package in folders:
        where = f"{package}/pyproject.toml"
        text = rename_distributions((root / where).read_text(), suffix, where)
        (target / where).write_text(text)
    return target


# --- CUDA from Debian's packages -----------------------------------------------------------------

# Where each file of Debian's CUDA packages goes in the layout of NVIDIA's installer (bin/nvcc
# with nvcc.profile beside it, nvvm/, include/, lib64/), which nvcc and CMake's FindCUDAToolkit
# expect: (prefix in the package, destination folder, the names kept (patterns) or None for all).
_DEBIAN_CUDA_LAYOUT = (
    ("usr/lib/nvidia-cuda-toolkit/bin/crt/", "bin/crt", None),
    ("usr/lib/nvidia-cuda-toolkit/bin/", "bin", {"nvcc"}),
    ("usr/lib/nvidia-cuda-toolkit/bin/", "nvvm/bin", {"cicc"}),
    ("usr/lib/nvidia-cuda-toolkit/libdevice/", "nvvm/libdevice", None),
    (
        "usr/bin/",
        "bin",
        {"bin2c", "cudafe++", "cuobjdump", "fatbinary", "nvlink", "nvprune", "ptxas"},
    ),
    ("usr/include/", "include", None),
    (
        "usr/lib/x86_64-linux-gnu/",
        "lib64",
        {"libcudart_static.a", "libcudadevrt.a", "libculibos.a", "libcudart.so.12*"},
    ),
)
# nvcc.profile of NVIDIA's installer: every path relative to nvcc's own folder.
_NVCC_PROFILE = """\
TOP              = $(_HERE_)/..
NVVMIR_LIBRARY_DIR = $(TOP)/$(_NVVM_BRANCH_)/libdevice
LD_LIBRARY_PATH += $(TOP)/lib64:
PATH            += $(TOP)/$(_NVVM_BRANCH_)/bin:$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64/stubs" "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
"""


def _place(member: str) -> str | None:
    """Where a package member goes in the toolkit (relative to it), or None to leave it out."""
    for prefix, folder, names in _DEBIAN_CUDA_LAYOUT:
        if not member.startswith(prefix):
            continue
        rest = member[len(prefix) :]
        if names is None or any(fnmatch.fnmatchcase(rest, name) for name in names):
            return f"{folder}/{rest}"
    return None


def _unpack_deb(deb: Path, home: Path) -> int:
    """Unpacks the members of `deb` that the toolkit needs into `home` (dpkg-deb streams the
    data archive; nothing is installed). Returns how many it placed."""
    placed = 0
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as proc:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as archive:
            for member in archive:
                where = _place(member.name.removeprefix("./"))
                if where is None or member.isdir():
                    continue
                destination = home / where
                destination.parent.mkdir(parents=True, exist_ok=True)
                if destination.is_symlink() or destination.exists():
                    destination.unlink()
                if member.issym():
                    os.symlink(member.linkname, destination)
                elif member.isfile():
                    with archive.extractfile(member) as data, open(destination, "wb") as out:
                        shutil.copyfileobj(data, out)
                    destination.chmod(member.mode & 0o755)
                else:
                    continue
                placed += 1
    if proc.returncode != 0:
        raise RuntimeError(f"dpkg-deb --fsys-tarfile {deb.name} exited {proc.returncode}")
    return placed


def fetch_debian_cuda(
    home: Path, suite: str, packages: Iterable[str], work: Path, log=print
) -> Path:
    """Downloads `packages` from Debian `suite`'s archive (main and non-free) with apt-get and a
    configuration of its own in `work` (the machine's apt sources and state are not touched, and
    nothing is installed), and assembles them into the CUDA toolkit `home`; returns its nvcc."""
    shutil.rmtree(work, ignore_errors=True)
    for folder in ("lists/partial", "archives/partial", "debs", "preferences.d"):
        (work / folder).mkdir(parents=True)
    keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
    (work / "sources.list").write_text(
        f"deb [signed-by={keyring}] http://deb.debian.org/debian {suite} main non-free\n"
    )
    (work / "apt.conf").write_text(
        f'Dir::Etc::SourceList "{work / "sources.list"}";\n'
        'Dir::Etc::SourceParts "/nonexistent";\n'
        f'Dir::Etc::Preferences "{work / "preferences"}";\n'
        f'Dir::Etc::PreferencesParts "{work / "preferences.d"}";\n'
        f'Dir::State::Lists "{work / "lists"}";\n'
        f'Dir::Cache::Archives "{work / "archives"}";\n'
        f'Dir::Cache::pkgcache "{work / "pkgcache.bin"}";\n'
        f'Dir::Cache::srcpkgcache "{work / "srcpkgcache.bin"}";\n'
    )
    env = {**os.environ, "APT_CONFIG": str(work / "apt.conf")}
    subprocess.run(["apt-get", "update", "-q"], env=env, check=True)
    names = list(packages)
    log(f"downloading Debian {suite}'s {', '.join(names)} (about 1 GB)")
    subprocess.run(["apt-get", "download", "-q", *names], env=env, check=True, cwd=work / "debs")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    for deb in sorted((work / "debs").glob("*.deb")):
        log(f"{deb.name}: {_unpack_deb(deb, home)} files")
    (home / "bin" / "nvcc.profile").write_text(_NVCC_PROFILE)
    (home / "lib64" / "libcudart.so").symlink_to("libcudart.so.12")
    shutil.rmtree(work, ignore_errors=True)  # the .deb files (1 GB) are not kept
    return home / "bin" / "nvcc"


def nvcc_release(nvcc: str | Path) -> str | None:
    """The CUDA release (e.g. "12.4") of `nvcc`, from ``nvcc --version``, or None if it does
    not run."""
    try:
        out = subprocess.run(
            [str(nvcc), "--version"], capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = re.search(r"release (\d+\.\d+)", out)
    return found.group(1) if found else None
