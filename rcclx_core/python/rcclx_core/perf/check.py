"""Inputs, and the results they must produce: the check behind the ``#wrong`` column.

Every rank's input is a pure function of (seed, rank, block, count), so each rank rebuilds every
other rank's input by itself and computes its own expected output, in float64 or (for data that
is only moved) as the exact element bits. Nothing the check relies on travels through the library
under test.

The values are chosen so that the expected result is exact in the element type whatever order
the library combines ranks in, so the comparison can be exact rather than "close":

- sum, avg: integers in [-m, m] ([0, m] for unsigned types) with nranks * m within the integers
  the type holds exactly (2048 for float16, 256 for bfloat16, 2**24 for float32, ...), so every
  partial sum is exact. avg then rounds sum / nranks once: floats may differ from the float64
  quotient by eps relative; integer types truncate toward zero, exactly. Only where nranks is too
  large for such an m (bfloat16 beyond 256 ranks) is a rounding bound of (nranks - 1) * eps *
  sum(|x|) allowed.
- prod: +-1, times 2 on at most k ranks (2**k representable), so every product is an exact
  power of two.
- min, max: integers in [-100, 100] (within the type), exact.
- all_gather, all_to_all, broadcast: random values over the type (floats at full precision),
  compared bit for bit.

Before the checked call the output buffer is filled with a value that no correct output holds
(NaN for float types, the lowest value of a signed integer type, the highest of an unsigned one:
inputs are drawn to keep every expected value away from it), so an element the library never
writes counts as wrong.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rcclx_core.perf.spec import ROOT, Config, DTypeSpec

_SUM_MAX = 16
_MINMAX_MAX = 100


def _sum_bound(dt: DTypeSpec, nranks: int) -> int:
    # exact_int - 1: a sum never reaches an unsigned type's highest value (its poison)
    return max(1, min(_SUM_MAX, (dt.exact_int - 1) // nranks))


def to_storage(values: np.ndarray, dt: DTypeSpec) -> np.ndarray:
    """Converts values (float64 or integers) to the type's storage; bfloat16 rounds to nearest."""
    if dt.name != "bfloat16":
        return values.astype(dt.storage)
    bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return (bits >> 16).astype(np.uint16)


def to_float64(stored: np.ndarray, dt: DTypeSpec) -> np.ndarray:
    if dt.name == "bfloat16":
        return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return stored.astype(np.float64)


def block(cfg: Config, nranks: int, rank: int, index: int, count: int) -> np.ndarray:
    """Block ``index`` of ``rank``'s input, in storage form: the same in every process."""
    dt = cfg.dtype
    rng = np.random.default_rng([cfg.seed, rank, index, count])
    if not cfg.coll.reduces:
        if dt.is_float:
            return to_storage(rng.uniform(-1.0, 1.0, count), dt)
        info = np.iinfo(dt.storage)  # every value but the poison
        low, high = (info.min + 1, info.max) if dt.signed else (info.min, info.max - 1)
        return rng.integers(low, high, count, dtype=dt.storage, endpoint=True)
    if cfg.redop == "prod":
        k = min(nranks, dt.max_pow2)
        values = rng.integers(1, 3, count) if rank < k else np.ones(count, np.int64)
        if dt.signed:
            values *= rng.choice(np.array([-1, 1]), count)
        return to_storage(values, dt)
    m = _MINMAX_MAX if cfg.redop in ("min", "max") else _sum_bound(dt, nranks)
    m = min(m, dt.exact_int)
    return to_storage(rng.integers(0 if not dt.signed else -m, m + 1, count), dt)


def send_buffer(cfg: Config, nranks: int, rank: int, count: int) -> np.ndarray:
    blocks = nranks if cfg.coll.blocked_send else 1
    return np.concatenate([block(cfg, nranks, rank, b, count) for b in range(blocks)])


def recv_buffer(cfg: Config, nranks: int, count: int) -> np.ndarray:
    blocks = nranks if cfg.coll.blocked_recv else 1
    return poison(np.empty(count * blocks, cfg.dtype.storage))


def poison(buf: np.ndarray) -> np.ndarray:
    """Fills ``buf`` (storage form) with the value no expected output holds (see above)."""
    if np.issubdtype(buf.dtype, np.signedinteger):
        buf.fill(np.iinfo(buf.dtype).min)
    else:
        buf.view(np.uint8).fill(0xFF)  # NaN for floats (bfloat16 too), the highest unsigned
    return buf


def _reduce(cfg: Config, nranks: int, part: Callable[[int], np.ndarray]):
    """The float64 reduction of ``part(r)`` over ranks r, and the tolerance to compare it with.

    Ranks' parts are generated one at a time, so memory stays at a few copies of one buffer.
    """
    dt = cfg.dtype
    combine = {
        "sum": np.add,
        "avg": np.add,
        "prod": np.multiply,
        "min": np.minimum,
        "max": np.maximum,
    }[cfg.redop]
    inexact = (
        cfg.redop in ("sum", "avg")
        and dt.is_float
        and nranks * _sum_bound(dt, nranks) > dt.exact_int
    )
    ref = to_float64(part(0), dt)
    abs_sum = np.abs(ref) if inexact else None
    for r in range(1, nranks):
        values = to_float64(part(r), dt)
        combine(ref, values, out=ref)
        if abs_sum is not None:
            abs_sum += np.abs(values)
    tol = (nranks - 1) * dt.eps * abs_sum if abs_sum is not None else 0.0
    if cfg.redop == "avg":
        ref /= nranks
        if dt.is_float:
            tol = tol / nranks + dt.eps * np.abs(ref)
        else:
            ref = np.trunc(ref)
    return ref, tol


def count_wrong(cfg: Config, nranks: int, rank: int, count: int, result: np.ndarray) -> int:
    """Elements of ``result`` (this rank's output) that differ from the expected output."""
    name = cfg.collective
    if name == "reduce" and rank != ROOT:
        return 0  # only the root's output is defined
    if name in ("all_reduce", "reduce", "reduce_scatter"):
        index = rank if name == "reduce_scatter" else 0
        ref, tol = _reduce(cfg, nranks, lambda r: block(cfg, nranks, r, index, count))
        got = to_float64(result, cfg.dtype)
        return int(np.count_nonzero(~(np.abs(got - ref) <= tol)))
    if name == "broadcast":
        expected = block(cfg, nranks, ROOT, 0, count)
    elif name == "all_gather":
        expected = np.concatenate([block(cfg, nranks, r, 0, count) for r in range(nranks)])
    else:  # all_to_all: block r of the output is block `rank` of rank r's input
        expected = np.concatenate([block(cfg, nranks, r, rank, count) for r in range(nranks)])
    bits = np.dtype(f"u{cfg.dtype.itemsize}")
    return int(np.count_nonzero(result.view(bits) != expected.view(bits)))
