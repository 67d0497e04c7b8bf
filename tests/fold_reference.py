"""The fold order of deterministic reductions (docs/determinism.rst) computed in numpy, for the
host and GPU determinism tests: each element folded left to right in rank order in the
accumulation type (float for 16-bit floats) and rounded once; across hosts, each host's ranks
so, rounded, then the hosts in the order of their first rank. Types by name: float32, float64,
float16, bfloat16 (held as uint16 bits)."""

import numpy as np

STORAGE = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
           "bfloat16": np.uint16}  # fmt: skip


def _acc_type(name):
    return np.float64 if name == "float64" else np.float32


def _widen(name, a):
    if name == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(_acc_type(name))


def _narrow(name, acc):
    """The accumulator rounded to nearest-even in the element type."""
    if name == "bfloat16":
        u = acc.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return acc.astype(STORAGE[name])


def inputs_of(name, rank, count):
    """Rank `rank`'s input: magnitudes over eight decades (six for float16), random signs."""
    rng = np.random.default_rng(1000 + rank)
    decades = 3 if name == "float16" else 4
    x = 10.0 ** rng.uniform(-decades, decades, count) * rng.choice([-1.0, 1.0], count)
    return _narrow(name, x.astype(_acc_type(name)))


def _fold(name, inputs, op):
    acc = _widen(name, inputs[0])
    for x in inputs[1:]:
        acc = acc * _widen(name, x) if op == "prod" else acc + _widen(name, x)
    return _narrow(name, acc)


def canonical(name, inputs, hosts=None, op="sum"):
    """The fold order over `inputs` (one per rank); `hosts` names each rank's host."""
    order = list(dict.fromkeys(hosts or [0] * len(inputs)))
    if len(order) == 1:
        return _fold(name, inputs, op)
    partials = [_fold(name, [inputs[r] for r, h in enumerate(hosts) if h == host], op)
                for host in order]  # fmt: skip
    return _fold(name, partials, op)


def mismatch(got, want):
    """How many elements differ in bits."""
    bits = f"u{got.itemsize}"
    return int(np.count_nonzero(got.view(bits) != want.view(bits)))
