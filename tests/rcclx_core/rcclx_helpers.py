"""Shared by the rcclx_core tests: dtype codecs, deterministic inputs, references, and checks.

Ranks run many cases in one launch and return, per case, a digest of their output and a
description of what was wrong (None when right); the parent asserts on those
(`checks.assert_cases`).

References: integer types are computed exactly in their own width (SUM and PROD wrap, AVG is
the wrapped sum divided by nranks toward zero); floating types in float64. Floating results
are compared exactly where the inputs make every intermediate representable (small integers),
else against an error bound: each combine step (at most nranks - 1 of them, plus one for the
PREMUL_SUM scaling and one for the AVG division) rounds once to the element type, so
|result - reference| <= steps * u * sum_r |input_r| + steps * (half the subnormal spacing),
u being the unit roundoff of the type (2^-4 for float8_e4m3, 2^-3 for float8_e5m2).
"""

from __future__ import annotations

import dataclasses

import numpy as np

import rcclx_core as rc

DT = rc.DataType
OP = rc.RedOp

# Pipelining: with 4 KiB chunks, LARGE elements of any type span several chunks (and several
# ring rounds on 4 ranks), so a few thousand elements exercise every chunk boundary.
CHUNK_ENV = {
    "RCCLX_DDA_CHUNK_BYTES": "4096",
    "RCCLX_DDA_LARGE_CHUNK_BYTES": "4096",
    "RCCLX_P2P_CHUNK_BYTES": "4096",
}
LARGE = 20011
COUNTS = (0, 1, 1001, LARGE)


@dataclasses.dataclass(frozen=True)
class Spec:
    """An element type: its rcclx DataType, numpy storage, and rounding parameters."""

    name: str
    rc: DT
    storage: type
    kind: str  # "int", "uint", "float" (numpy-native), "bf16", "e4m3", "e5m2"
    u: float = 0.0  # unit roundoff
    sub: float = 0.0  # subnormal spacing

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def needs_dtype_arg(self) -> bool:
        """numpy has no such type: the buffer is raw storage, reinterpreted by dtype=."""
        return self.kind in ("bf16", "e4m3", "e5m2")

    def kw(self) -> dict:
        return {"dtype": self.rc} if self.needs_dtype_arg else {}


SPECS = [
    Spec("int8", DT.INT8, np.int8, "int"),
    Spec("uint8", DT.UINT8, np.uint8, "uint"),
    Spec("int32", DT.INT32, np.int32, "int"),
    Spec("uint32", DT.UINT32, np.uint32, "uint"),
    Spec("int64", DT.INT64, np.int64, "int"),
    Spec("uint64", DT.UINT64, np.uint64, "uint"),
    Spec("float16", DT.FLOAT16, np.float16, "float", 2.0**-11, 2.0**-24),
    Spec("float32", DT.FLOAT32, np.float32, "float", 2.0**-24, 2.0**-149),
    Spec("float64", DT.FLOAT64, np.float64, "float", 2.0**-53, 2.0**-1074),
    Spec("bfloat16", DT.BFLOAT16, np.uint16, "bf16", 2.0**-8, 2.0**-133),
    Spec("float8_e4m3", DT.FLOAT8_E4M3, np.uint8, "e4m3", 2.0**-4, 2.0**-9),
    Spec("float8_e5m2", DT.FLOAT8_E5M2, np.uint8, "e5m2", 2.0**-3, 2.0**-16),
]
SPEC = {s.name: s for s in SPECS}

INT_OPS = [OP.SUM, OP.PROD, OP.MAX, OP.MIN, OP.AVG, OP.PREMUL_SUM, OP.BAND, OP.BOR, OP.BXOR]
FLOAT_OPS = [OP.SUM, OP.PROD, OP.MAX, OP.MIN, OP.AVG, OP.PREMUL_SUM]
RAND_OPS = [OP.SUM, OP.MAX, OP.MIN, OP.AVG, OP.PREMUL_SUM]


def reduction_cases(specs=SPECS):
    """(spec, op, values) for every type and every operator valid for it. values is "int"
    (small integers, or the full range for integer types) or "rand" (normal samples)."""
    out = []
    for s in specs:
        if s.is_int:
            out += [(s, op, "int") for op in INT_OPS]
        else:
            out += [(s, op, "int") for op in FLOAT_OPS]
            out += [(s, op, "rand") for op in RAND_OPS]
    return out


# --- codecs ---------------------------------------------------------------------------


def _fp8_table(exp_bits: int, man_bits: int) -> np.ndarray:
    bias = (1 << (exp_bits - 1)) - 1
    vals = np.empty(256, dtype=np.float64)
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        e = (code >> man_bits) & ((1 << exp_bits) - 1)
        m = code & ((1 << man_bits) - 1)
        if exp_bits == 4 and e == 15 and m == 7:
            vals[code] = np.nan
        elif exp_bits == 5 and e == 31:
            vals[code] = sign * np.inf if m == 0 else np.nan
        elif e == 0:
            vals[code] = sign * m * 2.0 ** (1 - bias - man_bits)
        else:
            vals[code] = sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)
    return vals


_FP8 = {"e4m3": _fp8_table(4, 3), "e5m2": _fp8_table(5, 2)}


def decode(spec: Spec, a: np.ndarray) -> np.ndarray:
    """Storage -> float64 values (floating types) or the integers themselves."""
    if spec.is_int:
        return a
    if spec.kind == "float":
        return a.astype(np.float64)
    if spec.kind == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return _FP8[spec.kind][a]


def encode(spec: Spec, x: np.ndarray) -> np.ndarray:
    """float64 -> storage, to a nearest representable value (used to make inputs only: the
    references use the decoded inputs, so the tie rule does not matter)."""
    x = np.asarray(x, dtype=np.float64)
    if spec.kind == "float":
        return x.astype(spec.storage)
    if spec.kind == "bf16":
        u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    table = _FP8[spec.kind]
    codes = np.flatnonzero(np.isfinite(table))
    order = codes[np.argsort(table[codes], kind="stable")]
    vals = table[order]
    i = np.clip(np.searchsorted(vals, x), 1, len(vals) - 1)
    pick = np.where(np.abs(vals[i - 1] - x) <= np.abs(vals[i] - x), i - 1, i)
    return order[pick].astype(np.uint8)


# --- inputs -----------------------------------------------------------------------------


def make_input(spec: Spec, op, values: str, rank: int, count: int, seed: int = 0) -> np.ndarray:
    """This rank's input of one reduction case (storage array), the same in every process."""
    rng = np.random.default_rng([seed, rank, count, SPECS.index(spec), int(op), values == "rand"])
    if spec.is_int:
        info = np.iinfo(spec.storage)
        if op == OP.PREMUL_SUM:  # scaled values must stay in range (the scaling truncates)
            lo, hi = (0, 8) if spec.kind == "uint" else (-8, 8)
        else:
            lo, hi = int(info.min), int(info.max)
        return rng.integers(lo, hi, size=count, endpoint=True, dtype=spec.storage)
    if values == "rand":
        return encode(spec, rng.standard_normal(count))
    small = op == OP.PROD or spec.kind in ("e4m3", "e5m2")
    lim = 2 if small else 8
    return encode(spec, rng.integers(-lim, lim, size=count, endpoint=True).astype(np.float64))


def make_bytes(spec: Spec, rank: int, count: int, tag: int = 0) -> np.ndarray:
    """Arbitrary bit patterns (NaNs included) for data-movement collectives."""
    rng = np.random.default_rng([tag, rank, count, SPECS.index(spec)])
    itemsize = np.dtype(spec.storage).itemsize
    return rng.integers(0, 256, size=count * itemsize, dtype=np.uint8).view(spec.storage)


def scalar_of(spec: Spec, values: str, rank: int) -> float:
    """Each rank's PREMUL_SUM scalar."""
    return 0.5 + 0.25 * rank if values == "rand" else float(rank + 1)


def is_exact(spec: Spec, op, values: str) -> bool:
    if spec.is_int or op in (OP.MAX, OP.MIN):
        return True
    if values != "int":
        return False
    if op in (OP.SUM, OP.PROD):
        return True
    # Small integers times integer scalars stay representable in all but the 8-bit floats.
    return op == OP.PREMUL_SUM and spec.kind in ("float", "bf16")


# --- references -------------------------------------------------------------------------


def reference(spec: Spec, op, inputs: list[np.ndarray], scalars: list[float]):
    """(reference, bound): the expected result and, for floating sums and products, the
    per-element error bound of the rounding model (None: no rounding, exact)."""
    n = len(inputs)
    if spec.is_int:
        st = spec.storage
        if op == OP.PREMUL_SUM:
            inputs = [(x.astype(np.int64) * int(s)).astype(st) for x, s in zip(inputs, scalars)]
        if op in (OP.SUM, OP.AVG, OP.PREMUL_SUM):
            acc = inputs[0].copy()
            for x in inputs[1:]:
                acc = (acc + x).astype(st)  # wraps
            if op == OP.AVG:
                q = acc // st(n)
                if spec.kind == "int":  # toward zero, as C++ divides
                    q = (q + ((acc % st(n) != 0) & (acc < 0))).astype(st)
                acc = q.astype(st)
            return acc, None
        fn = {
            OP.PROD: np.multiply,
            OP.MAX: np.maximum,
            OP.MIN: np.minimum,
            OP.BAND: np.bitwise_and,
            OP.BOR: np.bitwise_or,
            OP.BXOR: np.bitwise_xor,
        }[op]
        acc = inputs[0].copy()
        for x in inputs[1:]:
            acc = fn(acc, x).astype(st)
        return acc, None
    xs = [decode(spec, x) for x in inputs]
    steps = n - 1
    if op == OP.PREMUL_SUM:
        xs = [x * s for x, s in zip(xs, scalars)]
        steps += 1
    if op in (OP.SUM, OP.AVG, OP.PREMUL_SUM):
        ref = np.sum(xs, axis=0) if xs[0].size else xs[0].copy()
        mag = np.sum(np.abs(xs), axis=0) if xs[0].size else xs[0].copy()
        if op == OP.AVG:
            ref = ref / n
            steps += 1
    elif op == OP.PROD:
        ref = np.prod(xs, axis=0) if xs[0].size else xs[0].copy()
        mag = np.abs(ref)
    else:
        ref = (np.max if op == OP.MAX else np.min)(xs, axis=0) if xs[0].size else xs[0].copy()
        mag = None
    if mag is None:
        return ref, None
    # (float64 references round too: allow for that as well)
    return ref, (steps * (spec.u + 2.0**-53) * mag + steps * spec.sub) * 1.0001


def compare(spec: Spec, got: np.ndarray, ref: np.ndarray, bound) -> str | None:
    """None when `got` (storage) matches the reference, else what is wrong."""
    if got.shape != ref.shape:
        return f"shape {got.shape} != {ref.shape}"
    if got.size == 0:
        return None
    g = decode(spec, got)
    if bound is None:
        bad = g != ref
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            return (
                f"{int(bad.sum())} of {g.size} differ; first [{i}]: got {g[i]!r}, want {ref[i]!r}"
            )
        return None
    err = np.abs(g - ref)
    bad = ~(err <= bound)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (
            f"{int(bad.sum())} of {g.size} outside the bound; first [{i}]: got {g[i]!r}, "
            f"want {ref[i]!r} +- {bound[i]:.3g}"
        )
    return None


def check_reduction(spec, op, values, got, inputs, scalars) -> str | None:
    ref, bound = reference(spec, op, inputs, scalars)
    if is_exact(spec, op, values):
        bound = None
    return compare(spec, got, ref, bound)


def comm_of(ctx):
    return rc.Communicator.from_unique_id(ctx.unique_id(), ctx.rank, ctx.nranks)
