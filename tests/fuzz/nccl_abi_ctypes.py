"""libnccl.so.2's C ABI as the fuzzing properties of test_fuzz_nccl_abi.py see it: the registry
of the properties, the ctypes signatures and constants, the call wrapper that records each call
and its result, the child's environment, and the argument strategies and the World (library,
communicators) a property runs in."""

from __future__ import annotations

import ctypes
import os
import pathlib
import re

import fuzz_cases
from hypothesis import strategies as st

# ---- The properties: every one registered by name (the child runs one) ----------------------

PROPERTIES = {}


def prop(fn):
    PROPERTIES[fn.__name__] = fn
    return fn


# ---- The ABI as ctypes sees it ----------------------------------------------------------------

P = ctypes.c_void_p
INT = ctypes.c_int
SIZE = ctypes.c_size_t
INT32 = st.integers(-(2**31), 2**31 - 1)
SIZE_T = st.integers(0, 2**64 - 1)

NCCL_NUM_RESULTS = 9
SUCCESS, INVALID_ARGUMENT, INVALID_USAGE, IN_PROGRESS = 0, 4, 5, 7
NUM_TYPES = 12  # ncclInt8 .. ncclFloat8e5m2
TYPE_BYTES = [1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1]
NUM_OPS = 5  # ncclSum .. ncclAvg; ncclNumOps and above are PreMulSum handles
API_MAGIC = 0xCAFEBEEF
SIM_INFO_MAGIC = 0x74685283
VERSION_CODE = 23102
CONFIG_BYTES = 112  # NCCL 2.31's ncclConfig_t
CONFIG_UNDEF_INT = -(2**31)
# Offsets of ncclConfig_t's fields the reader interprets (nccl.h).
CONFIG_BLOCKING, CONFIG_COMM_NAME = 16, 48
# The element capacity of every real buffer the properties pass; counts up to it are valid.
CAPACITY = 64
PTRDIFF_MAX = 2**63 - 1


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


SIGNATURES = {
    "ncclGetVersion": [P],
    "ncclGetUniqueId": [P],
    "ncclMemAlloc": [P, SIZE],
    "ncclMemFree": [P],
    "ncclCommInitRank": [P, INT, UniqueId, INT],
    "ncclCommInitRankConfig": [P, INT, UniqueId, INT, P],
    "ncclCommInitRankScalable": [P, INT, INT, INT, P, P],
    "ncclCommInitAll": [P, INT, P],
    "ncclCommFinalize": [P],
    "ncclCommDestroy": [P],
    "ncclCommAbort": [P],
    "ncclCommRevoke": [P, INT],
    "ncclCommSplit": [P, INT, INT, P, P],
    "ncclCommShrink": [P, P, INT, P, P, INT],
    "ncclCommGetAsyncError": [P, P],
    "ncclCommCount": [P, P],
    "ncclCommCuDevice": [P, P],
    "ncclCommUserRank": [P, P],
    "ncclCommRegister": [P, P, SIZE, P],
    "ncclCommDeregister": [P, P],
    "ncclCommWindowRegister": [P, P, SIZE, P, INT],
    "ncclCommWindowDeregister": [P, P],
    "ncclRedOpCreatePreMulSum": [P, P, INT, INT, P],
    "ncclRedOpDestroy": [INT, P],
    "ncclReduce": [P, P, SIZE, INT, INT, INT, P, P],
    "ncclBcast": [P, SIZE, INT, INT, P, P],
    "ncclBroadcast": [P, P, SIZE, INT, INT, P, P],
    "ncclAllReduce": [P, P, SIZE, INT, INT, P, P],
    "ncclReduceScatter": [P, P, SIZE, INT, INT, P, P],
    "ncclAllGather": [P, P, SIZE, INT, P, P],
    "ncclAlltoAll": [P, P, SIZE, INT, P, P],
    "ncclGather": [P, P, SIZE, INT, INT, P, P],
    "ncclScatter": [P, P, SIZE, INT, INT, P, P],
    "ncclSend": [P, SIZE, INT, INT, P, P],
    "ncclRecv": [P, SIZE, INT, INT, P, P],
    "ncclAllToAllv": [P, P, P, P, P, P, INT, P, P],
    "ncclAllToAllvDynamic": [P, SIZE, P, P, P, SIZE, P, P, SIZE, INT, P, P],
    "ncclAllToAllvDynamicKnownCounts": [P, SIZE, P, P, P, SIZE, P, P, SIZE, INT, P, P],
    "ncclGroupStart": [],
    "ncclGroupEnd": [],
    "ncclGroupSimulateEnd": [P],
    "ncclDevCommCreate": [P, P, P],
    "ncclDevCommDestroy": [P, P],
    "ncclCommQueryProperties": [P, P],
}


class Abi:
    """The library with every entry's signature declared. `call` checks the property for one
    call: `bad` maps each argument made invalid (its nccl.h name) to the result codes its
    rejection may have; empty, the call must return one of `ok`."""

    def __init__(self, log_path: str) -> None:
        import rcclx_nccl

        self.lib = ctypes.CDLL(str(rcclx_nccl.library_path("nccl")))
        for name, argtypes in SIGNATURES.items():
            fn = getattr(self.lib, name)
            fn.argtypes = argtypes
            fn.restype = INT
        self.lib.ncclGetErrorString.argtypes = [INT]
        self.lib.ncclGetErrorString.restype = ctypes.c_char_p
        self.lib.ncclGetLastError.argtypes = [P]
        self.lib.ncclGetLastError.restype = ctypes.c_char_p
        self.lib.ncclResetDebugInit.argtypes = []
        self.lib.ncclResetDebugInit.restype = None
        self.log = fuzz_cases.ExampleLog(log_path)
        self.results: dict[str, dict[int, int]] = {}

    def last_error(self) -> str:
        return self.lib.ncclGetLastError(None).decode(errors="replace")

    def call(self, entry: str, *args, bad: dict | None = None, ok=(SUCCESS,)) -> int:
        bad = bad or {}
        # A rejection of its own (a success leaves the last error as it was): the message read
        # after the call is then this call's only if it names this entry.
        assert self.lib.ncclGetVersion(None) == INVALID_ARGUMENT
        self.log.record(f"{entry}{tuple(_show(a) for a in args)} invalid={sorted(bad)}")
        rc = getattr(self.lib, entry)(*args)
        assert 0 <= rc < NCCL_NUM_RESULTS, f"{entry} returned {rc}, not an ncclResult_t"
        tally = self.results.setdefault(entry, {})
        tally[rc] = tally.get(rc, 0) + 1
        if not bad:
            assert rc in ok, f"{entry} with valid arguments returned {rc}: {self.last_error()}"
            return rc
        message = self.last_error()
        assert rc != SUCCESS, f"{entry} accepted invalid {sorted(bad)}"
        assert message.startswith(f"{entry}: ") and len(message) > len(entry) + 2, (
            f"{entry} returned {rc} but left the last error {message!r}"
        )
        text = message[len(entry) + 2 :]
        named = [name for name in bad if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)]
        assert named, f"{entry}: {message!r} names none of the invalid {sorted(bad)}"
        assert any(rc in bad[name] for name in named), (
            f"{entry} returned {rc} for {named} (expected {[bad[n] for n in named]}): {message!r}"
        )
        return rc


def _show(arg) -> str:
    if isinstance(arg, ctypes.Array):
        return f"{type(arg).__name__}{list(arg)[:8]}"
    if isinstance(arg, UniqueId):
        return f"UniqueId({bytes(arg.internal)[:24].hex()}...)"
    if isinstance(arg, (P, INT, SIZE)):
        return repr(arg.value)
    return repr(arg)


def _child_environment() -> dict[str, str]:
    import rcclx_nccl

    env = rcclx_nccl.environ()
    env.update(
        RCCLX_NCCL_HOST_ONLY="1",
        RCCLX_TIMEOUT_MS="300",
        RCCLX_BOOTSTRAP_ADDR="127.0.0.1",
        RCCLX_DEBUG="none",
        NCCL_COMM_ID="",
        PYTHONPATH=os.pathsep.join(
            [str(pathlib.Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
        ),
    )
    return env


# ---- Strategies ---------------------------------------------------------------------------------


def datatypes(bad: dict, name: str = "datatype"):
    """A valid datatype, or (adding `name` to `bad`) any other int."""

    @st.composite
    def draw_type(draw):
        if draw(st.integers(0, 7)):
            return draw(st.integers(0, NUM_TYPES - 1))
        value = draw(INT32.filter(lambda v: not 0 <= v < NUM_TYPES))
        bad[name] = {INVALID_ARGUMENT}
        return value

    return draw_type()


def roots(bad: dict, name: str):
    """Rank 0 (the only rank of a 1-rank communicator), or (bad) any other int."""

    @st.composite
    def draw_root(draw):
        if draw(st.integers(0, 5)):
            return 0
        bad[name] = {INVALID_ARGUMENT}
        return draw(INT32.filter(lambda v: v != 0))

    return draw_root()


class World:
    """What the properties call on: the library and a 1-rank host communicator of the child,
    plus a readable block of random bytes posing as a foreign handle."""

    def __init__(self, log_path: str) -> None:
        self.abi = Abi(log_path)
        self.comm = self.new_comm()
        self.foreign = ctypes.create_string_buffer(
            bytes((7 + 3 * i) % 256 for i in range(512)), 512
        )

    def new_comm(self) -> P:
        comm = P()
        self.abi.call("ncclCommInitAll", ctypes.byref(comm), 1, None)
        return comm

    def destroy(self, comm: P) -> None:
        self.abi.call("ncclCommDestroy", comm)


def comms(world: World, bad: dict):
    """The world's communicator, or (bad) NULL or a foreign handle."""

    @st.composite
    def draw_comm(draw):
        kind = draw(st.sampled_from(["real"] * 10 + ["null", "foreign"]))
        if kind == "real":
            return world.comm
        bad["comm"] = {INVALID_ARGUMENT}
        return None if kind == "null" else ctypes.cast(world.foreign, P)

    return draw_comm()


def out_pointer(bad: dict, name: str, ctype=INT):
    """A pointer to a fresh `ctype`, or (bad) NULL."""

    @st.composite
    def draw_out(draw):
        if draw(st.integers(0, 5)):
            return ctypes.byref(ctype())
        bad[name] = {INVALID_ARGUMENT}
        return None

    return draw_out()
