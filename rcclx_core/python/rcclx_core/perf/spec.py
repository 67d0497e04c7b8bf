"""What one benchmark run measures: element types, collectives, byte sizes and the run's options.

Plain data with no dependence on a communicator, so the command line, the ranks and the report
share one description of the run.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from rcclx_core import DataType, RedOp, config_dump


class UsageError(Exception):
    """A command line the run cannot honour, found where it can only be found (in a rank, e.g. a
    --tuning spec the library refuses): reported like argparse's errors, with exit status 2."""


@dataclasses.dataclass(frozen=True)
class DTypeSpec:
    """An element type: its numpy storage, its rcclx type, and the values it holds exactly."""

    name: str
    storage: type  # numpy dtype of the array's memory (bfloat16 is stored as uint16)
    rcclx: DataType
    is_float: bool
    exact_int: int  # the largest integer n such that every integer in [-n, n] is exact
    max_pow2: int  # the largest k such that 2**k is representable
    eps: float  # machine epsilon (floats); 0 for integers

    @property
    def itemsize(self) -> int:
        return np.dtype(self.storage).itemsize

    @property
    def signed(self) -> bool:
        return self.is_float or np.issubdtype(self.storage, np.signedinteger)


def _int(name: str, storage: type, rcclx: DataType) -> DTypeSpec:
    info = np.iinfo(storage)
    bits = info.bits - (1 if info.min < 0 else 0)
    return DTypeSpec(name, storage, rcclx, False, int(info.max), bits - 1, 0.0)


DTYPES: dict[str, DTypeSpec] = {
    d.name: d
    for d in (
        DTypeSpec("float32", np.float32, DataType.FLOAT32, True, 2**24, 127, 2.0**-23),
        DTypeSpec("float16", np.float16, DataType.FLOAT16, True, 2**11, 15, 2.0**-10),
        DTypeSpec("bfloat16", np.uint16, DataType.BFLOAT16, True, 2**8, 127, 2.0**-7),
        DTypeSpec("float64", np.float64, DataType.FLOAT64, True, 2**53, 1023, 2.0**-52),
        _int("int8", np.int8, DataType.INT8),
        _int("uint8", np.uint8, DataType.UINT8),
        _int("int32", np.int32, DataType.INT32),
        _int("uint32", np.uint32, DataType.UINT32),
        _int("int64", np.int64, DataType.INT64),
        _int("uint64", np.uint64, DataType.UINT64),
    )
}
# nccl-tests' and common short names.
DTYPE_ALIASES = {
    "float": "float32",
    "half": "float16",
    "bf16": "bfloat16",
    "double": "float64",
    "int": "int32",
    "fp32": "float32",
    "fp16": "float16",
    "fp64": "float64",
}

REDOPS = {
    "sum": RedOp.SUM,
    "prod": RedOp.PROD,
    "min": RedOp.MIN,
    "max": RedOp.MAX,
    "avg": RedOp.AVG,
}

# How a buffer is laid out in blocks of the call's ``count``: one block, one block per rank, or
# all_to_all_v's uneven blocks (see ``a2av_counts``).
SINGLE, BLOCKS, UNEVEN = "single", "blocks", "uneven"
# How the in-place form of a collective overlaps its buffers (nccl-tests' in-place offsets):
# the same buffer, the send buffer as block ``rank`` of the receive buffer, or the receive
# buffer as block ``rank`` of the send buffer. None: the collective has no in-place form here.
SAME, SEND_IN_RECV, RECV_IN_SEND = "same", "send_in_recv", "recv_in_send"


@dataclasses.dataclass(frozen=True)
class CollectiveSpec:
    """How a collective lays out its buffers and how nccl-tests converts its time to busbw.

    ``count`` is the count argument NCCL's API takes (all_to_all_v: the smallest per-peer
    count, see ``a2av_counts``; send_recv: the elements each rank sends).
    """

    name: str
    reduces: bool
    send: str  # layout of sendbuf: SINGLE, BLOCKS or UNEVEN
    recv: str  # layout of recvbuf
    busbw: str  # nccl-tests' factor: "2(n-1)/n", "(n-1)/n" or "1"
    inplace: str | None  # SAME, SEND_IN_RECV, RECV_IN_SEND or None
    low_precision: bool = False  # has the FP8 path (low_precision=True)
    rooted: bool = False  # defined output on ROOT only (reduce, gather)

    def busbw_factor(self, nranks: int) -> float:
        return {"2(n-1)/n": 2.0 * (nranks - 1) / nranks, "(n-1)/n": (nranks - 1) / nranks}.get(
            self.busbw, 1.0
        )

    def units(self, layout: str, nranks: int) -> int:
        """Elements of a buffer of this layout, in units of ``count``."""
        return {SINGLE: 1, BLOCKS: nranks, UNEVEN: nranks * (nranks + 1) // 2}[layout]

    def send_elems(self, count: int, nranks: int) -> int:
        return count * self.units(self.send, nranks)

    def recv_elems(self, count: int, nranks: int) -> int:
        return count * self.units(self.recv, nranks)


COLLECTIVES: dict[str, CollectiveSpec] = {
    c.name: c
    for c in (
        CollectiveSpec("all_reduce", True, SINGLE, SINGLE, "2(n-1)/n", SAME, True),
        CollectiveSpec("all_gather", False, SINGLE, BLOCKS, "(n-1)/n", SEND_IN_RECV, True),
        CollectiveSpec("reduce_scatter", True, BLOCKS, SINGLE, "(n-1)/n", RECV_IN_SEND, True),
        CollectiveSpec("all_to_all", False, BLOCKS, BLOCKS, "(n-1)/n", SAME, True),
        CollectiveSpec("all_to_all_v", False, UNEVEN, UNEVEN, "(n-1)/n", None),
        # all_to_all_v's blocks, the counts in arrays beside the data (on the GPU there).
        CollectiveSpec("alltoallv_dynamic", False, UNEVEN, UNEVEN, "(n-1)/n", None),
        CollectiveSpec("broadcast", False, SINGLE, SINGLE, "1", SAME),
        CollectiveSpec("reduce", True, SINGLE, SINGLE, "1", SAME, rooted=True),
        CollectiveSpec("gather", False, SINGLE, BLOCKS, "(n-1)/n", SEND_IN_RECV, rooted=True),
        CollectiveSpec("scatter", False, BLOCKS, SINGLE, "(n-1)/n", RECV_IN_SEND),
        CollectiveSpec("send_recv", False, SINGLE, SINGLE, "1", None),
    )
}
# The element types of the low-precision path (docs/low_precision.rst: "eligible").
LP_DTYPES = ("float32", "bfloat16")
LP_REDOPS = ("sum", "avg")
# The element types whose sums depend on the order ranks are folded in (--check-determinism).
DETERMINISM_DTYPES = ("float32", "float64", "float16", "bfloat16")


def a2av_counts(count: int, nranks: int, src: int, dst: int) -> int:
    """all_to_all_v's uneven blocks: rank ``src`` sends ``count * (1 + (src + dst) % n)``
    elements to ``dst``. Every rank sends and receives the same total, n(n+1)/2 counts."""
    return count * (1 + (src + dst) % nranks)


def allreduce_algos() -> tuple[str, ...]:
    """Every allreduce algorithm this build knows, auto last: the choices of the configuration
    knob RCCLX_ALLREDUCE_ALGO, so a new algorithm needs no change here."""
    for knob in config_dump():
        if knob["name"] == "RCCLX_ALLREDUCE_ALGO" and knob["choices"]:
            return (*(c for c in knob["choices"].split("|") if c != "auto"), "auto")
    return ("ring", "dda_flat", "dda_tree", "auto")


ROOT = 0  # root of broadcast, reduce, gather and scatter

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """'64', '4K', '64M', '1G' (also '4KB', '4KiB'): binary multiples, as nccl-tests reads them."""
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"'{text}' is not a byte size (examples: 64, 4K, 64M, 1G)")
    return int(m.group(1)) * 1024 ** " kmgt".index((m.group(2) or " ").lower())


def format_bytes(n: int) -> str:
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    return str(n)


@dataclasses.dataclass
class Config:
    """Every option of a run, as rank 0 and every other rank see it."""

    collective: str = "all_reduce"
    minbytes: int = 64
    maxbytes: int = 64 << 20
    stepfactor: int = 4
    iters: int = 100
    warmup_iters: int = 10
    check: bool = True
    datatype: str = "float32"
    redop: str = "sum"
    algos: tuple[str, ...] = ("auto",)  # all_reduce's algorithms; ("-",) for the others
    statistic: str = "mean"
    device: str = "cpu"  # where the buffers are: "cpu" (host memory) or "cuda"
    device_reason: str = ""  # why (the header prints it)
    graph: int = 0  # ops per CUDA graph (--graph); 0: eager
    inplace: bool = False
    low_precision: bool = False
    determinism: bool = False  # wide-range sums checked bit for bit against the fold order
    symmetric: bool = False  # outputs in comm.alloc_symmetric buffers (implies inplace)
    tuning: str | None = None  # rcclx_core._testing.set_gpu_tuning spec
    compare: tuple[str, ...] = ()  # peers: "nccl", "symm_mem", "gloo"
    passes: int = 1  # passes over every column per size, each keeping its best
    targets: str | None = None  # targets file (--targets)
    strict_targets: bool = False
    json_path: str | None = None
    plot_path: str | None = None
    seed: int = 1234
    hosts: int = 1  # local ranks spread over this many pretend hosts (RCCLX_HOST_ID), in blocks
    mps: bool = False  # start an MPS control daemon for the run (--mps)

    @property
    def dtype(self) -> DTypeSpec:
        return DTYPES[self.datatype]

    @property
    def coll(self) -> CollectiveSpec:
        return COLLECTIVES[self.collective]

    @property
    def mode(self) -> str:
        return f"graph of {self.graph}" if self.graph else "eager"

    @property
    def warmup_calls(self) -> int:
        """Warm-up iterations per size. Eager on a GPU, at least as many as the timed ones, issued
        back to back like them: what calls in flight hold (a staged call's pinned staging across
        hosts, allocated the first time that many are in flight) then exists before the timing."""
        if self.device == "cuda" and not self.graph:
            return max(self.warmup_iters, self.iters)
        return self.warmup_iters

    def sizes(self) -> list[int]:
        """The requested byte sizes: minbytes, times stepfactor, up to maxbytes."""
        out, size = [], self.minbytes
        while size <= self.maxbytes:
            out.append(size)
            size *= self.stepfactor
        return out

    def units(self, nranks: int) -> int:
        """How many counts the larger per-rank buffer holds."""
        c = self.coll
        return max(c.units(c.send, nranks), c.units(c.recv, nranks))

    def count_for(self, nbytes: int, nranks: int) -> int:
        """The count argument for a requested size (rounded down to whole elements and blocks)."""
        return nbytes // (self.units(nranks) * self.dtype.itemsize)

    def bytes_for(self, count: int, nranks: int) -> int:
        """The size reported for a count: the larger per-rank buffer, as nccl-tests reports."""
        return count * self.units(nranks) * self.dtype.itemsize
