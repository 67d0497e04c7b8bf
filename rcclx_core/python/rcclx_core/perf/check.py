"""Inputs, and the results they must produce: the check behind the ``#wrong`` column (and, with
``--low-precision``, behind the ``maxerr`` column).

Every rank's input is a pure function of (seed, rank, block, count), so each rank rebuilds every
other rank's input by itself and computes its own expected output, in float64 or (for data that
is only moved) as the exact element bits. Nothing the check relies on travels through the library
under test. The same host arrays fill GPU buffers (copied to the device) and receive their
results (copied back), so the check is the same on both devices.

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
- data that is only moved (all_gather, all_to_all(_v), broadcast, gather, scatter, send_recv):
  random values over the type (floats at full precision), compared bit for bit.

Before the checked call the output buffer is filled with a value that no correct output holds
(NaN for float types, the lowest value of a signed integer type, the highest of an unsigned one:
inputs are drawn to keep every expected value away from it), so an element the library never
writes counts as wrong.

With ``--check-determinism`` (floating-point sums) the inputs instead span eight decades (six
for float16) with random signs, where the order of the additions shows in the last bits, and every
element must have the bits of the fold order (docs/determinism.rst): rank order on one host,
each pretend host's ranks then the hosts in order with ``--hosts``, accumulated in float32 (the
element type for float64) and rounded once.

Low precision (FP8 e4m3 on the wire) cannot be exact. Its inputs are uniform in [0.25, 1), all
positive, so a sum has no cancellation; the result is compared with the float64 reference as the
largest error relative to the largest reference magnitude, ``max|out - ref| / max|ref|``, and
held to the bound docs/low_precision.rst states per element: ``|D(Q(x)) - x| <= 2^-4 |x| +
2^-10 scale`` per quantization, the scale at most ``amax / 224`` (see ``lp_bound``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from rcclx_core.perf.spec import BLOCKS, ROOT, SINGLE, Config, DTypeSpec, a2av_counts

_SUM_MAX = 16
_MINMAX_MAX = 100
_LP_LOW, _LP_HIGH = 0.25, 1.0  # range of the low-precision inputs


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
    if cfg.low_precision:
        return to_storage(rng.uniform(_LP_LOW, _LP_HIGH, count), dt)
    if cfg.determinism:
        decades = 3 if dt.name == "float16" else 4
        wide = 10.0 ** rng.uniform(-decades, decades, count) * rng.choice([-1.0, 1.0], count)
        return to_storage(wide.astype(np.float32 if dt.name != "float64" else np.float64), dt)
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


def _send_segments(cfg: Config, nranks: int, rank: int, count: int) -> list[tuple[int, int]]:
    """(block index, elements) of each segment of ``rank``'s send buffer, in order."""
    layout = cfg.coll.send
    if layout == SINGLE:
        return [(0, count)]
    if layout == BLOCKS:
        return [(b, count) for b in range(nranks)]
    return [(d, a2av_counts(count, nranks, rank, d)) for d in range(nranks)]


def send_buffer(cfg: Config, nranks: int, rank: int, count: int) -> np.ndarray:
    """``rank``'s whole input (host storage form)."""
    parts = [block(cfg, nranks, rank, i, c) for i, c in _send_segments(cfg, nranks, rank, count)]
    return np.concatenate(parts)


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


def _reduced(cfg: Config, nranks: int, rank: int, count: int):
    """(float64 reference, tolerance) of a reduction's output on ``rank``."""
    index = rank if cfg.collective == "reduce_scatter" else 0
    return _reduce(cfg, nranks, lambda r: block(cfg, nranks, r, index, count))


def _fold(dt: DTypeSpec, parts: list[np.ndarray]) -> np.ndarray:
    """The left fold of ``parts`` in the accumulation type, rounded once to the element type."""
    acc_type = np.float64 if dt.name == "float64" else np.float32
    acc = to_float64(parts[0], dt).astype(acc_type)
    for part in parts[1:]:
        acc += to_float64(part, dt).astype(acc_type)
    return to_storage(acc, dt)


def fold_order(cfg: Config, nranks: int, rank: int, count: int) -> np.ndarray:
    """The bits a deterministic sum gives on ``rank`` (storage form): each pretend host's ranks
    (rank r on host r * hosts // nranks) folded, then the hosts' sums in host order."""
    index = rank if cfg.collective == "reduce_scatter" else 0
    parts = [block(cfg, nranks, r, index, count) for r in range(nranks)]
    hosts = [[r for r in range(nranks) if r * cfg.hosts // nranks == h] for h in range(cfg.hosts)]
    if len(hosts) == 1:
        return _fold(cfg.dtype, parts)
    return _fold(cfg.dtype, [_fold(cfg.dtype, [parts[r] for r in ranks]) for ranks in hosts])


def _moved(cfg: Config, nranks: int, rank: int, count: int) -> np.ndarray:
    """The exact output (storage form) on ``rank`` of a collective that only moves data."""
    n, name = nranks, cfg.collective

    def cat(parts):
        return np.concatenate(list(parts))

    if name == "broadcast":
        return block(cfg, n, ROOT, 0, count)
    if name in ("all_gather", "gather"):
        return cat(block(cfg, n, r, 0, count) for r in range(n))
    if name == "all_to_all":  # block r of the output is block `rank` of rank r's input
        return cat(block(cfg, n, r, rank, count) for r in range(n))
    if name in ("all_to_all_v", "alltoallv_dynamic"):
        return cat(block(cfg, n, s, rank, a2av_counts(count, n, s, rank)) for s in range(n))
    if name == "scatter":
        return block(cfg, n, ROOT, rank, count)
    if name == "send_recv":  # the ring: each rank receives from rank - 1
        return block(cfg, n, (rank - 1) % n, 0, count)
    raise ValueError(f"no reference for collective {name}")


def _defined(cfg: Config, rank: int) -> bool:
    """Whether ``rank``'s output is defined (reduce and gather define the root's only)."""
    return not cfg.coll.rooted or rank == ROOT


def count_wrong(cfg: Config, nranks: int, rank: int, count: int, result: np.ndarray) -> int:
    """Elements of ``result`` (this rank's output) that differ from the expected output."""
    if not _defined(cfg, rank):
        return 0
    bits = np.dtype(f"u{cfg.dtype.itemsize}")
    if cfg.determinism:
        expected = fold_order(cfg, nranks, rank, count)
        return int(np.count_nonzero(result.view(bits) != expected.view(bits)))
    if cfg.coll.reduces:
        ref, tol = _reduced(cfg, nranks, rank, count)
        got = to_float64(result, cfg.dtype)
        return int(np.count_nonzero(~(np.abs(got - ref) <= tol)))
    expected = _moved(cfg, nranks, rank, count)
    return int(np.count_nonzero(result.view(bits) != expected.view(bits)))


def max_error(cfg: Config, nranks: int, rank: int, count: int, result: np.ndarray) -> float:
    """``max|out - ref| / max|ref|`` against the float64 reference (inf for a NaN output)."""
    if not _defined(cfg, rank) or result.size == 0:
        return 0.0
    if cfg.coll.reduces:
        ref = _reduced(cfg, nranks, rank, count)[0]
    else:
        ref = to_float64(_moved(cfg, nranks, rank, count), cfg.dtype)
    diff = np.abs(to_float64(result, cfg.dtype) - ref)
    if not np.all(np.isfinite(diff)):
        return float("inf")
    return float(diff.max() / max(float(np.abs(ref).max()), np.finfo(np.float64).tiny))


def lp_bound(cfg: Config, nranks: int) -> float:
    """The largest ``max_error`` a correct low-precision result may have.

    Per quantization an element is off by at most 2^-4 of itself plus 2^-10 of its block's
    scale, which is at most amax / 224 (docs/low_precision.rst): with positive inputs at most
    f = 2^-4 + 2^-18 of the largest reference value. all_reduce quantizes twice (the inputs,
    then the sum), the others once; on top come the float32 sum's rounding and, where a
    reduce_scatter's bfloat16 output rounds the float32 sum, 2^-8.
    """
    f = 2.0**-4 + 2.0**-18
    quantizations = 2 if cfg.collective == "all_reduce" else 1
    rounding = (nranks + 1) * 2.0**-24 if cfg.coll.reduces else 0.0
    if cfg.collective == "reduce_scatter" and cfg.datatype == "bfloat16":
        rounding += 2.0**-8
    return (1 + f) ** quantizations * (1 + rounding) - 1


def evaluate(cfg: Config, nranks: int, rank: int, count: int, result: np.ndarray) -> dict:
    """What the check reports for one output: ``wrong`` elements, or with --low-precision the
    ``max_error``."""
    if cfg.low_precision:
        return {"max_error": max_error(cfg, nranks, rank, count, result)}
    return {"wrong": count_wrong(cfg, nranks, rank, count, result)}
