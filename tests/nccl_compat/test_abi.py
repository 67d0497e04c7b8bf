"""The NCCL ABI of libnccl.so.2 / librccl.so.1: exported symbols (every one NCCL 2.31.2's
library exports, with pnccl* aliases), sonames, a program binding every export at load, a few
functions called through ctypes and from a plain C program (no GPU needed), and nccl.h /
nccl_device.h compiled as C, C++ and CUDA: NCCL 2.31.2's sizes, offsets, values and function
signatures checked as numbers and types written into the test sources, and programs using what
2.31 added compiled with nvcc."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from nccl_programs import build, cuda_toolkit

import ctran
import rcclx_nccl

# The functions of nccl.h NCCL's library exported up to 2.28 (41), then those NCCL 2.31 added,
# and those only this library exports: RCCL's ncclAllToAllv, RCCLX's ncclAllToAllvDynamic and its
# known-counts form, and ncclCftBarrierCreateRequirement (declared by NCCL 2.31's headers, not
# exported by its library); each also as a pnccl* alias, nothing else.
NCCL_H = (
    "ncclAllGather", "ncclAllReduce", "ncclAlltoAll", "ncclBcast", "ncclBroadcast",
    "ncclCommAbort", "ncclCommCount", "ncclCommCuDevice", "ncclCommDeregister",
    "ncclCommDestroy", "ncclCommFinalize", "ncclCommGetAsyncError", "ncclCommInitAll",
    "ncclCommInitRank", "ncclCommInitRankConfig", "ncclCommInitRankScalable", "ncclCommRegister",
    "ncclCommRevoke", "ncclCommShrink", "ncclCommSplit", "ncclCommUserRank",
    "ncclCommWindowDeregister", "ncclCommWindowRegister", "ncclGather", "ncclGetErrorString",
    "ncclGetLastError", "ncclGetUniqueId", "ncclGetVersion", "ncclGroupEnd",
    "ncclGroupSimulateEnd", "ncclGroupStart", "ncclMemAlloc", "ncclMemFree", "ncclRecv",
    "ncclRedOpCreatePreMulSum", "ncclRedOpDestroy", "ncclReduce", "ncclReduceScatter",
    "ncclResetDebugInit", "ncclScatter", "ncclSend",
)  # fmt: skip
# NCCL 2.31's per-collective config calls, parameter calls, ncclWinGetUserPtr, the one-sided
# calls, ncclResetDebugInitInternal (which no header declares), and of nccl_device.h
# ncclCommQueryProperties, the host team calls, the window address queries, the barrier, LL
# all-to-all and GIN scratch requirements and ncclLLA2ACalcSlots.
NCCL_2_31 = (
    "ncclAllGatherConfig", "ncclAllReduceConfig", "ncclAlltoAllConfig", "ncclBroadcastConfig",
    "ncclGatherConfig", "ncclReduceConfig", "ncclReduceScatterConfig", "ncclScatterConfig",
    "ncclParamBind", "ncclParamDumpAll", "ncclParamGet", "ncclParamGetAllParameterKeys",
    "ncclParamGetI16", "ncclParamGetI32", "ncclParamGetI64", "ncclParamGetI8",
    "ncclParamGetParameter", "ncclParamGetStr", "ncclParamGetU16", "ncclParamGetU32",
    "ncclParamGetU64", "ncclParamGetU8", "ncclWinGetUserPtr", "ncclCommQueryProperties",
    "ncclTeamWorld", "ncclTeamLsa", "ncclTeamRail", "ncclTeamCft", "ncclTeamCftMultimem",
    "ncclTeamRankToWorld", "ncclTeamRankToLsa", "ncclGetLsaDevicePointer",
    "ncclGetPeerDevicePointer", "ncclGetLsaMultimemDevicePointer", "ncclGetMultimemDevicePointer",
    "ncclGetMultimemDeviceLeInfo", "ncclGetCftDeviceLeInfo", "ncclGetPeerDeviceLeInfo",
    "ncclLsaBarrierCreateRequirement", "ncclGinBarrierCreateRequirement",
    "ncclPutSignal", "ncclSignal", "ncclWaitSignal", "ncclCommGetUniqueId", "ncclCommGrow",
    "ncclCommSuspend", "ncclCommResume", "ncclCommMemStats", "ncclResetDebugInitInternal",
    "ncclLLA2ACalcSlots", "ncclLLA2ACreateRequirement", "ncclGinOutboxCreateRequirement",
    "ncclGinInboxA2ACreateRequirement",
)  # fmt: skip
EXTRA = (
    "ncclDevCommCreate", "ncclDevCommDestroy", "ncclAllToAllv", "ncclAllToAllvDynamic",
    "ncclAllToAllvDynamicKnownCounts", "ncclCftBarrierCreateRequirement",
)  # fmt: skip
EXPORTED = NCCL_H + NCCL_2_31 + EXTRA
IMPLEMENTED = EXPORTED
# Exported but declared in no header of ours or NCCL's: a program naming it declares it itself.
UNDECLARED = ("ncclResetDebugInitInternal",)
LIBRARIES = {"nccl": "libnccl.so.2", "rccl": "librccl.so.1"}
# What NCCL 2.31.2's own libnccl.so.2 exports (its nm output, checked in).
NCCL_2_31_2_EXPORTS = Path(__file__).resolve().parent / "nccl_2_31_2_exports.txt"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} (binutils) is not installed")
    return path


def _compiler(*names: str) -> str:
    """The first of `names` on PATH; skips the test when there is none."""
    for name in names:
        path = shutil.which(name)
        if path is not None:
            return path
    pytest.skip(f"no {' or '.join(names)} on this machine")


def _compile(*command: str) -> None:
    """Runs a compiler command, failing the test with its diagnostics."""
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr[-3000:]}"


def _c_program(tmp_path: Path, name: str, text: str, library: str, std: str) -> Path:
    """C source `text` compiled with -Wall -Werror against our include dir into a program
    linked to our `library` (nccl or rccl)."""
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    exe = tmp_path / name
    lib = rcclx_nccl.library_path(library)
    _compile(_compiler("cc", "gcc"), std, "-Wall", "-Werror", "-o", str(exe), str(src),
             f"-I{rcclx_nccl.include_dir()}", f"-L{lib.parent}", f"-l:{lib.name}")  # fmt: skip
    return exe


def _header_macro(name: str) -> int:
    text = (rcclx_nccl.include_dir() / "nccl.h").read_text()
    match = re.search(rf"^#define {name} (\d+)$", text, re.MULTILINE)
    assert match, f"nccl.h defines no {name}"
    return int(match.group(1))


def _exports(name: str) -> set[str]:
    """The dynamic symbols library `name` defines."""
    out = subprocess.run(
        [_tool("nm"), "-D", "--defined-only", str(rcclx_nccl.library_path(name))],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_exports_only_nccl_symbols(name):
    symbols = _exports(name)
    assert symbols, "no dynamic symbols exported"
    stray = sorted(s for s in symbols if not s.startswith(("nccl", "pnccl")))
    assert not stray, f"exports outside nccl*/pnccl*: {stray}"
    expected = set(EXPORTED) | {"p" + f for f in EXPORTED}
    assert symbols == expected, (
        f"missing: {sorted(expected - symbols)}, unexpected: {sorted(symbols - expected)}"
    )
    assert len(NCCL_H) == 41


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_exports_every_function_nccl_2_31_2_exports(name):
    lines = NCCL_2_31_2_EXPORTS.read_text().splitlines()
    nvidia = {line for line in lines if line and not line.startswith("#")}
    assert len({s for s in nvidia if s.startswith("nccl")}) == 96
    missing = sorted(nvidia - _exports(name))
    assert not missing, f"NCCL 2.31.2 exports these and {LIBRARIES[name]} does not: {missing}"


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_soname(name):
    out = subprocess.run(
        [_tool("readelf"), "-d", str(rcclx_nccl.library_path(name))],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert f"Library soname: [{LIBRARIES[name]}]" in out


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_version_matches_header(name):
    major, minor, patch = (_header_macro(f"NCCL_{p}") for p in ("MAJOR", "MINOR", "PATCH"))
    assert (major, minor, patch) == (2, 31, 2)
    code = _header_macro("NCCL_VERSION_CODE")
    assert code == major * 10000 + minor * 100 + patch == 23102
    assert rcclx_nccl.get_version(name) == code


def test_pnccl_aliases_are_the_same_functions():
    lib = rcclx_nccl.load()
    for f in IMPLEMENTED:
        plain = ctypes.cast(getattr(lib, f), ctypes.c_void_p).value
        alias = ctypes.cast(getattr(lib, "p" + f), ctypes.c_void_p).value
        assert plain == alias, f


def test_error_strings():
    lib = rcclx_nccl.load()
    strings = [lib.ncclGetErrorString(code).decode() for code in range(9)]
    assert strings[0] == "no error"
    assert strings[4].startswith("invalid argument")
    assert strings[6] == "remote process exited or there was a network error"
    assert strings[8] == "operation timed out"  # ncclTimeout (NCCL 2.31)
    assert len(set(strings)) == 9, strings
    assert lib.ncclGetErrorString(9).decode() == "unknown result code"  # ncclNumResults
    assert lib.ncclGetErrorString(-1).decode() == "unknown result code"


def test_null_arguments_return_invalid_argument_and_set_last_error():
    lib = rcclx_nccl.load()
    assert lib.ncclGetVersion(None) == 4  # ncclInvalidArgument
    assert lib.ncclGetLastError(None).decode() == "ncclGetVersion: version is NULL"
    assert lib.ncclGetUniqueId(None) == 4
    assert lib.ncclGetLastError(None).decode() == "ncclGetUniqueId: uniqueId is NULL"
    # A successful call leaves the last error as it was.
    assert rcclx_nccl.get_version() == _header_macro("NCCL_VERSION_CODE")
    assert lib.ncclGetLastError(None).decode() == "ncclGetUniqueId: uniqueId is NULL"
    with pytest.raises(rcclx_nccl.NcclError, match="version is NULL"):
        rcclx_nccl._check(lib, "ncclGetVersion", lib.ncclGetVersion(None))


def test_last_error_is_per_thread():
    lib = rcclx_nccl.load()
    assert lib.ncclGetVersion(None) == 4
    seen = {}

    def other_thread():
        seen["before"] = lib.ncclGetLastError(None).decode()
        lib.ncclGetUniqueId(None)
        seen["after"] = lib.ncclGetLastError(None).decode()

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen == {"before": "", "after": "ncclGetUniqueId: uniqueId is NULL"}
    assert lib.ncclGetLastError(None).decode() == "ncclGetVersion: version is NULL"


def test_unique_id_names_a_live_store(monkeypatch):
    monkeypatch.setenv("RCCLX_BOOTSTRAP_ADDR", "127.0.0.1")
    first = rcclx_nccl.get_unique_id()
    second = rcclx_nccl.get_unique_id("rccl")
    assert len(first) == len(second) == rcclx_nccl.NCCL_UNIQUE_ID_BYTES == 128
    assert first != second
    host, port = ctran.describe_unique_id(first).rsplit(":", 1)
    assert host == "127.0.0.1"
    # The id's store is served by libnccl's own thread; ctran's Python client reaches it with
    # the secret the id carries (and only with it).
    with pytest.raises(ctran.RemoteError, match="wrong job secret"):
        ctran.TcpStore(host, int(port), timeout_ms=10_000)
    store = ctran.TcpStore(host, int(port), timeout_ms=10_000, secret=ctran.unique_id_secret(first))
    store.set("abi-test", b"hello")
    assert store.get("abi-test", timeout_ms=10_000) == b"hello"
    assert store.add("abi-counter", 5) == 5


C_PROGRAM = r"""
#include <stdio.h>
#include <string.h>
#include <nccl.h>

int main(void) {
  int version = 0;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) return 1;
  if (ncclGetVersion(NULL) != ncclInvalidArgument) return 2;
  printf("last error: %s\n", ncclGetLastError(NULL));
  if (ncclGetUniqueId(&id) != ncclSuccess) return 3;
  if (pncclGetVersion(&version) != ncclSuccess) return 4;
  printf("version %d, sizeof(ncclUniqueId) %zu, ncclMaxRedOp %d\n", version, sizeof id,
         (int)ncclMaxRedOp);
  return 0;
}
"""


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_plain_c_program_links_and_runs(name, tmp_path):
    exe = _c_program(tmp_path, "prog", C_PROGRAM, name, "-std=c99")
    env = rcclx_nccl.environ()
    env["RCCLX_BOOTSTRAP_ADDR"] = "127.0.0.1"
    run = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    code = _header_macro("NCCL_VERSION_CODE")
    assert run.stdout.splitlines() == [
        "last error: ncclGetVersion: version is NULL",
        f"version {code}, sizeof(ncclUniqueId) 128, ncclMaxRedOp 2147483647",
    ]


@pytest.mark.parametrize("name", sorted(LIBRARIES))
def test_program_referencing_every_export_loads_with_bind_now(name, tmp_path):
    names = [p + f for f in EXPORTED for p in ("", "p")]
    undeclared = [p + f for f in UNDECLARED for p in ("", "p")]
    text = (
        "#include <stdio.h>\n#include <nccl.h>\n#include <nccl_device.h>\n"
        + "".join(f"void {n}(void);\n" for n in undeclared)
        + "typedef void (*fn)(void);\n"
        "static fn table[] = {\n" + "".join(f"  (fn){n},\n" for n in names) + "};\n"
        "int main(void) {\n"
        "  size_t n = sizeof table / sizeof table[0], set = 0;\n"
        "  for (size_t i = 0; i < n; ++i) set += table[i] != 0;\n"
        '  printf("%zu of %zu bound\\n", set, n);\n'
        "  return set == n ? 0 : 1;\n}\n"
    )
    exe = _c_program(tmp_path, "all", text, name, "-std=c11")
    env = rcclx_nccl.environ()
    env["LD_BIND_NOW"] = "1"
    run = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == f"{len(names)} of {len(names)} bound"
    undefined = subprocess.run(
        [_tool("nm"), "-D", "--undefined-only", str(exe)], capture_output=True, text=True
    ).stdout
    assert set(names) <= {line.split()[-1] for line in undefined.splitlines() if line.strip()}


HEADER_USE = r"""
#include <nccl.h>
ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
typedef char unique_id_is_128_bytes[sizeof(ncclUniqueId) == 128 ? 1 : -1];
typedef char config_is_112_bytes[sizeof(ncclConfig_t) == 112 ? 1 : -1];
typedef char op_is_int_sized[sizeof(ncclRedOp_t) == sizeof(int) ? 1 : -1];
int main(void) { return config.blocking == NCCL_CONFIG_UNDEF_INT && sim.size ? 0 : 1; }
"""


DEVICE_HEADER_USE = r"""
#include <nccl.h>
#include <nccl_device.h>
ncclDevComm devComms[4];
ncclDevCommRequirements reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
typedef char team_is_three_ints[sizeof(ncclTeam_t) == 3 * sizeof(int) ? 1 : -1];
typedef char ll_handle_is_8_bytes[sizeof(ncclLLA2AHandle_t) == 8 ? 1 : -1];
typedef char outbox_handle_is_8_bytes[sizeof(ncclGinOutboxHandle) == 8 ? 1 : -1];
typedef char inbox_handle_is_16_bytes[sizeof(ncclGinInboxA2AHandle) == 16 ? 1 : -1];
int main(void) {
  ncclTeam_t world = {8, 5, 1};
  ncclTeam_t rail = ncclTeamOuterFactor(world, 4);
  int ok = reqs.size == sizeof reqs && reqs.ginContextCount == 4 && props.magic == NCCL_API_MAGIC &&
           props.ginType == NCCL_GIN_TYPE_NONE && devComms[3].rank == 0 && rail.stride == 4 &&
           ncclTeamRankToTeam(world, rail, 0) == 1 && ncclTeamRankIsMember(rail, world, 1);
  return ok ? 0 : 1;
}
"""


@pytest.mark.parametrize(
    "source",
    [pytest.param(HEADER_USE, id="nccl.h"), pytest.param(DEVICE_HEADER_USE, id="nccl_device.h")],
)
@pytest.mark.parametrize(
    ("compiler", "std", "suffix"),
    [("cc", "-std=c99", ".c"), ("cc", "-std=c11", ".c"), ("c++", "-std=c++17", ".cpp")],
)
def test_headers_compile_pedantic_without_cuda(source, compiler, std, suffix, tmp_path):
    # nccl.h, and nccl_device.h in a host-only program: the types, initializers, host calls and
    # team arithmetic; the device part needs nvcc and is left out.
    src = tmp_path / f"use{suffix}"
    src.write_text(source)
    _compile(_compiler(compiler), std, "-Wall", "-Wextra", "-Werror", "-pedantic",
             "-DRCCLX_NCCL_NO_CUDA", f"-I{rcclx_nccl.include_dir()}", "-o",
             str(tmp_path / "use"), str(src))  # fmt: skip
    assert subprocess.run([str(tmp_path / "use")]).returncode == 0


def _nvcc() -> str:
    return _compiler("nvcc")


@pytest.mark.parametrize("suffix", [".cu", ".c"])
def test_device_header_compiles_with_nvcc_as_cuda_and_as_c(suffix, tmp_path):
    # Through nvcc: a .cu file (device part included) and a .c file (host compiler, C).
    src = tmp_path / f"use{suffix}"
    src.write_text(DEVICE_HEADER_USE)
    _compile(_nvcc(), "-arch=sm_90", *(["-std=c++17"] if suffix == ".cu" else []), "-Werror",
             "all-warnings", f"-I{rcclx_nccl.include_dir()}", "-o", str(tmp_path / "use"),
             str(src))  # fmt: skip


def test_device_api_kernels_compile_with_nvcc_and_trap(tmp_path):
    # Kernels written as nccl-tests writes them compile against our include dir alone, for
    # sm_90; what RCCLX cannot provide compiles to a trap, never to code that runs on.
    source = Path(__file__).resolve().parent / "c" / "device_api.cu"
    command = [
        _nvcc(), "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings", "-Xcompiler",
        "-Wall,-Wextra", f"-I{rcclx_nccl.include_dir()}", str(source),
    ]  # fmt: skip
    _compile(*command, "-c", "-o", str(tmp_path / "device_api.o"))
    ptx = tmp_path / "device_api.ptx"
    _compile(*command, "-ptx", "-o", str(ptx))
    text = ptx.read_text()
    assert "trap;" in text
    for kernel in ("lsaAllReduce", "helpers", "ginAllGather"):
        assert f".entry _Z{len(kernel)}{kernel}" in text, kernel


def test_nccl_h_brings_the_cuda_half_bfloat16_and_fp8_types(tmp_path):
    # NVIDIA's nccl.h includes cuda_fp16.h, cuda_bf16.h and (C++) cuda_fp8.h; programs such as
    # nccl-tests use `half` without including them.
    source = Path(__file__).resolve().parent / "c" / "cuda_types.cu"
    _compile(_nvcc(), "-std=c++17", "-c", f"-I{rcclx_nccl.include_dir()}", str(source), "-o",
             str(tmp_path / "cuda_types.o"))  # fmt: skip


def test_the_one_sided_benchmark_builds_from_the_installed_headers_and_library():
    # nccl_compat/bench/one_sided_gpu.c uses the NCCL API and the CUDA runtime alone and is
    # built on GPU machines as a user's program would be: against the installed nccl.h and
    # libnccl.so.2 (-Wall -Wextra -Werror).
    root = cuda_toolkit()
    source = Path(__file__).resolve().parents[2] / "nccl_compat" / "bench" / "one_sided_gpu.c"
    exe = build(source, flags=("-isystem", f"{root}/include"), tag="-bench",
                libs=(f"-L{root / 'lib64'}", "-lcudart"))  # fmt: skip
    assert exe.is_file()


C_SOURCES = Path(__file__).resolve().parent / "c"


@pytest.mark.parametrize(
    ("compiler", "std", "language"),
    [("cc", "-std=c11", "c"), ("c++", "-std=c++17", "c++")],
)
def test_abi_numbers_are_nccl_2_31_2s(compiler, std, language, tmp_path):
    # Sizes, alignments, field offsets, enumerators, macros and initializers, as C and C++
    # without CUDA; the program checks the initializers field by field when run.
    exe = tmp_path / "abi"
    _compile(_compiler(compiler), "-x", language, std, "-Wall", "-Wextra", "-Werror", "-pedantic",
             "-DRCCLX_NCCL_NO_CUDA", f"-I{rcclx_nccl.include_dir()}", "-o", str(exe),
             str(C_SOURCES / "abi_2_31.c"))  # fmt: skip
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout == "abi_2_31: initializers match\n", run.stdout


def test_abi_numbers_hold_with_the_cuda_headers(tmp_path):
    # The same numbers with cuda_runtime.h, the fp16 / bf16 / fp8 headers and the device part
    # included (nvcc, CUDA).
    _compile(_nvcc(), "-x", "cu", "-std=c++17", "-arch=sm_90", "-Werror", "all-warnings",
             f"-I{rcclx_nccl.include_dir()}", "-c", "-o", str(tmp_path / "abi.o"),
             str(C_SOURCES / "abi_2_31.c"))  # fmt: skip


@pytest.mark.parametrize("cuda", [False, True], ids=["host", "nvcc"])
def test_function_signatures_are_nccl_2_31_2s(cuda, tmp_path):
    # Every host function of NCCL 2.31.2's nccl.h and nccl_device.h with the exact type NCCL
    # gives it; under nvcc the host overload is found beside the device function of the same
    # name.
    source = str(C_SOURCES / "signatures_2_31.cpp")
    include = f"-I{rcclx_nccl.include_dir()}"
    if cuda:
        command = [_nvcc(), "-x", "cu", "-std=c++17", "-arch=sm_90", "-Werror", "all-warnings"]
    else:
        command = [_compiler("c++"), "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic",
                   "-DRCCLX_NCCL_NO_CUDA"]  # fmt: skip
    _compile(*command, include, "-c", "-o", str(tmp_path / "signatures.o"), source)


def _ptx_entries(text: str) -> dict[str, str]:
    """Each kernel of a PTX file (its mangled name) and its body."""
    entries = {}
    for match in re.finditer(r"\.entry (\w+)\(", text):
        end = text.find("\n}", match.end())
        entries[match.group(1)] = text[match.end() : end]
    return entries


def test_nccl_2_31_device_api_compiles_and_only_the_missing_parts_trap(tmp_path):
    # A program written for NCCL 2.31 (LL all-to-all sessions, symmetric pointers, CFT,
    # GIN back-ends and its C-style calls, one-shot barriers, ncclCoopAny / ncclCoopBcast, the
    # local copy / reduce helpers) on half, __nv_bfloat16 and the fp8 types compiles with nvcc
    # against our include dir alone. The kernels using only what works here (local*) must not
    # trap; every other one must.
    command = [
        _nvcc(), "-arch=sm_90", "-std=c++17", "-Werror", "all-warnings", "-Xcompiler",
        "-Wall,-Wextra", f"-I{rcclx_nccl.include_dir()}", str(C_SOURCES / "device_api_2_31.cu"),
    ]  # fmt: skip
    _compile(*command, "-c", "-o", str(tmp_path / "device_api_2_31.o"))
    ptx = tmp_path / "device_api_2_31.ptx"
    _compile(*command, "-ptx", "-o", str(ptx))
    entries = _ptx_entries(ptx.read_text())
    local = {name: body for name, body in entries.items() if "local" in name}
    others = {name: body for name, body in entries.items() if "local" not in name}
    # localReduceCopy for five element types, localCoops, localTeams; llAllToAll for four,
    # symmetric for three, cft, gin.
    assert len(local) == 7 and len(others) == 9, sorted(entries)
    refusal = "rcclx_nccl_device11unsupported"  # the function that prints and traps
    for name, body in local.items():
        assert "trap;" not in body and refusal not in body, f"{name} traps"
    for name, body in others.items():
        assert refusal in body, f"{name} does not stop at what RCCLX cannot provide"
