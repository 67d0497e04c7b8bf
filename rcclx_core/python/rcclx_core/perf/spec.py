"""What one benchmark run measures: element types, collectives, byte sizes and the run's options.

Plain data with no dependence on a communicator, so the command line, the ranks and the report
share one description of the run.
"""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from rcclx_core import DataType, RedOp, config_dump


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


@dataclasses.dataclass(frozen=True)
class CollectiveSpec:
    """How a collective lays out its buffers and how nccl-tests converts its time to busbw.

    ``count`` is the count argument NCCL's API takes; a buffer holds either ``count`` elements
    or, where ``blocked_*`` says so, ``nranks`` blocks of ``count``.
    """

    name: str
    reduces: bool
    blocked_send: bool  # sendbuf holds nranks blocks (reduce_scatter, all_to_all)
    blocked_recv: bool  # recvbuf holds nranks blocks (all_gather, all_to_all)

    def busbw_factor(self, nranks: int) -> float:
        if self.name == "all_reduce":
            return 2.0 * (nranks - 1) / nranks
        if self.name in ("broadcast", "reduce"):
            return 1.0
        return (nranks - 1) / nranks


COLLECTIVES: dict[str, CollectiveSpec] = {
    c.name: c
    for c in (
        CollectiveSpec("all_reduce", True, False, False),
        CollectiveSpec("all_gather", False, False, True),
        CollectiveSpec("reduce_scatter", True, True, False),
        CollectiveSpec("all_to_all", False, True, True),
        CollectiveSpec("broadcast", False, False, False),
        CollectiveSpec("reduce", True, False, False),
    )
}


def allreduce_algos() -> tuple[str, ...]:
    """Every allreduce algorithm this build knows, auto last: the choices of the configuration
    knob RCCLX_ALLREDUCE_ALGO, so a new algorithm needs no change here."""
    for knob in config_dump():
        if knob["name"] == "RCCLX_ALLREDUCE_ALGO" and knob["choices"]:
            return (*(c for c in knob["choices"].split("|") if c != "auto"), "auto")
    return ("ring", "dda_flat", "dda_tree", "auto")


ROOT = 0  # root of broadcast and reduce

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)


def parse_bytes(text: str) -> int:
    """'64', '4K', '64M', '1G' (also '4KB', '4KiB'): binary multiples, as nccl-tests reads them."""
    m = _SIZE.match(text)
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
    compare: str | None = None
    json_path: str | None = None
    plot_path: str | None = None
    seed: int = 1234

    @property
    def dtype(self) -> DTypeSpec:
        return DTYPES[self.datatype]

    @property
    def coll(self) -> CollectiveSpec:
        return COLLECTIVES[self.collective]

    def sizes(self) -> list[int]:
        """The requested byte sizes: minbytes, times stepfactor, up to maxbytes."""
        out, size = [], self.minbytes
        while size <= self.maxbytes:
            out.append(size)
            size *= self.stepfactor
        return out

    def blocks(self, nranks: int) -> int:
        """How many blocks of ``count`` the larger per-rank buffer holds."""
        return nranks if self.coll.blocked_send or self.coll.blocked_recv else 1

    def count_for(self, nbytes: int, nranks: int) -> int:
        """The count argument for a requested size (rounded down to whole elements and blocks)."""
        return nbytes // (self.blocks(nranks) * self.dtype.itemsize)

    def bytes_for(self, count: int, nranks: int) -> int:
        """The size reported for a count: the larger per-rank buffer, as nccl-tests reports."""
        return count * self.blocks(nranks) * self.dtype.itemsize
