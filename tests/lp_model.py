"""A numpy model of the low-precision (LP) wire format and of the LP collectives' results.

`quantize` re-derives the wire format from its written rules (docs/low_precision.rst), without
sharing code with the C++ quantizer: the scale is found by search, the e4m3 rounding by a
nearest-value search with ties to the even code. The collective models (`all_reduce` ...) chain
a codec's round trip (this model's, or the library's lp_quantize / lp_dequantize) with float32
sums in rank order, as the algorithms promise, so a test can require equal bits.
"""

from __future__ import annotations

import numpy as np

E4M3_MAX = 448.0

# e4m3 values by code (NaN for 0x7f and 0xff).
_E4M3 = np.empty(256, dtype=np.float64)
for _c in range(256):
    _e, _m = (_c >> 3) & 0xF, _c & 7
    if _e == 15 and _m == 7:
        _v = np.nan
    elif _e == 0:
        _v = _m * 2.0**-9
    else:
        _v = (1 + _m / 8) * 2.0 ** (_e - 7)
    _E4M3[_c] = -_v if _c & 0x80 else _v
_POS_CODES = np.arange(0, 0x7F)  # non-negative finite codes, increasing values
_POS_VALUES = _E4M3[_POS_CODES]


def wire_bytes(count: int, block: int) -> int:
    nb = -(-count // block)
    return -(-nb * 4 // 16) * 16 + -(-count // 16) * 16


def _e4m3_rne(y: np.ndarray) -> np.ndarray:
    """Codes of finite y with |y| <= 448, round to nearest, ties to the even code."""
    a = np.abs(y)
    hi = np.clip(np.searchsorted(_POS_VALUES, a), 1, len(_POS_VALUES) - 1)
    lo = hi - 1
    dlo, dhi = a - _POS_VALUES[lo], _POS_VALUES[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    pick = np.where(a >= _POS_VALUES[-1], len(_POS_VALUES) - 1, pick)
    code = _POS_CODES[pick].astype(np.uint8)
    return code | np.where(np.signbit(y), 0x80, 0).astype(np.uint8)


def _scale_exp(amax: float) -> int:
    if amax == 0:
        return 0
    k = int(np.ceil(np.log2(amax / E4M3_MAX)))
    while amax > E4M3_MAX * 2.0**k:
        k += 1
    while amax <= E4M3_MAX * 2.0 ** (k - 1):
        k -= 1
    return min(max(k, -126), 120)


def quantize(x: np.ndarray, block: int) -> np.ndarray:
    """The wire segment (uint8) of float32 values x, from the written rules."""
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    n = x.size
    nb = -(-n // block)
    out = np.zeros(wire_bytes(n, block), dtype=np.uint8)
    scales = np.zeros(nb, dtype=np.float32)
    codes = np.zeros(n, dtype=np.uint8)
    for b in range(nb):
        xb = x[b * block : (b + 1) * block]
        finite = np.isfinite(xb)
        amax = float(np.max(np.abs(xb[finite]))) if finite.any() else 0.0
        k = _scale_exp(amax)
        has_nan, has_inf = np.isnan(xb).any(), np.isinf(xb).any()
        scales[b] = -(2.0**k) if has_inf and not has_nan else 2.0**k
        cb = np.empty(xb.size, dtype=np.uint8)
        cb[finite] = _e4m3_rne(xb[finite] * 2.0**-k)
        cb[~finite] = 0x7F | np.where(np.signbit(xb[~finite]), 0x80, 0).astype(np.uint8)
        codes[b * block : (b + 1) * block] = cb
    out[: nb * 4] = scales.view(np.uint8)
    off = -(-nb * 4 // 16) * 16
    out[off : off + n] = codes
    return out


def dequantize(wire: np.ndarray, count: int, block: int) -> np.ndarray:
    """float32 values of a wire segment of `count` elements."""
    nb = -(-count // block)
    scales = wire[: nb * 4].view(np.float32).astype(np.float64)
    off = -(-nb * 4 // 16) * 16
    codes = wire[off : off + count]
    s = np.repeat(scales, block)[:count]
    v = _E4M3[codes] * np.abs(s)
    special = (codes & 0x7F) == 0x7F
    inf = special & (s < 0)
    v[inf] = np.where(codes[inf] & 0x80, -np.inf, np.inf)
    return v.astype(np.float32)


# --- the collectives, given a codec -------------------------------------------------------


class Codec:
    """The round trip D(Q(.)) of float32 / bfloat16-storage arrays through a wire codec."""

    def __init__(self, block: int, rc=None):
        self.block = block
        self.rc = rc  # rcclx_core, to use the library's codec; None: this model's

    def roundtrip(self, x: np.ndarray, bf16: bool) -> np.ndarray:
        """float32 values of D(Q(x)); x is float32, or uint16 bfloat16 storage when bf16."""
        if self.rc is None:
            return dequantize(quantize(to_f32(x, bf16), self.block), x.size, self.block)
        kw = {"dtype": self.rc.DataType.BFLOAT16} if bf16 else {}
        wire = np.empty(self.rc._testing.lp_wire_bytes(x.size, self.block), dtype=np.uint8)
        self.rc._testing.lp_quantize(np.ascontiguousarray(x), wire, block_elems=self.block, **kw)
        out = np.empty(x.size, dtype=np.float32)
        self.rc._testing.lp_dequantize(wire, out, block_elems=self.block)
        return out


def to_f32(x: np.ndarray, bf16: bool) -> np.ndarray:
    if not bf16:
        return np.asarray(x, dtype=np.float32)
    return (x.astype(np.uint32) << 16).view(np.float32)


def from_f32(v: np.ndarray, bf16: bool) -> np.ndarray:
    """float32 -> the element type's storage (bfloat16 rounded to nearest even)."""
    v = np.asarray(v, dtype=np.float32)
    if not bf16:
        return v
    u = v.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(v)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def _sum_in_rank_order(parts: list[np.ndarray], average: bool) -> np.ndarray:
    acc = parts[0].astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        for p in parts[1:]:
            acc = (acc + p).astype(np.float32)
        if average:
            acc = (acc / np.float32(len(parts))).astype(np.float32)
    return acc


def _parts(codec: Codec, inputs, lo: int, hi: int, owner: int, bf16: bool) -> list[np.ndarray]:
    """Every rank's contribution to elements [lo, hi) as the owner sums them: the peers' through
    the codec, the owner's own exactly (it never crosses a link)."""
    return [
        to_f32(x[lo:hi], bf16) if p == owner else codec.roundtrip(x[lo:hi], bf16)
        for p, x in enumerate(inputs)
    ]


def all_reduce(codec: Codec, inputs: list[np.ndarray], bf16: bool, average=False):
    """Shard p (blocks [nb p / n, nb (p + 1) / n) of the buffer) is summed by rank p, requantized
    and decoded by every rank."""
    n, count = len(inputs), inputs[0].size
    nb = -(-count // codec.block)
    out = []
    for p in range(n):
        lo = min(nb * p // n * codec.block, count)
        hi = min(nb * (p + 1) // n * codec.block, count)
        s = _sum_in_rank_order(_parts(codec, inputs, lo, hi, p, bf16), average)
        out.append(codec.roundtrip(s, False))
    return from_f32(np.concatenate(out), bf16)


def reduce_scatter(codec: Codec, inputs, counts, rank: int, bf16: bool, average=False):
    lo = sum(counts[:rank])
    parts = _parts(codec, inputs, lo, lo + counts[rank], rank, bf16)
    return from_f32(_sum_in_rank_order(parts, average), bf16)


def all_gather(codec: Codec, inputs, bf16: bool):
    return from_f32(np.concatenate([codec.roundtrip(x, bf16) for x in inputs]), bf16)


def all_to_all(codec: Codec, inputs, rank: int, bf16: bool):
    m = inputs[0].size // len(inputs)
    blocks = [codec.roundtrip(x[rank * m : (rank + 1) * m], bf16) for x in inputs]
    return from_f32(np.concatenate(blocks), bf16)
