"""What every test compares with: bitwise and value comparison, digests (bitwise identity across
ranks), poisoned outputs (unwritten elements show), relative errors, references of reductions,
the parent's check of every rank's cases, and free ports.

Works on numpy arrays and on torch tensors (on any device; torch is imported only when given a
tensor, so the host-only tests do not need it).
"""

from __future__ import annotations

import hashlib

import numpy as np

from rcclx_core._testing import free_port_run  # noqa: F401 (the tests' port source)

POISON = 0x5A  # what poison() writes into integer (and raw-storage) outputs; floats get NaN


def _is_tensor(a) -> bool:
    return type(a).__module__.startswith("torch")


def as_bytes(a) -> np.ndarray:
    """The bytes of `a` (numpy array or torch tensor, copied to the host) as a flat uint8 array."""
    if _is_tensor(a):
        import torch

        flat = a.detach().contiguous().reshape(-1)
        return flat.view(torch.uint8).cpu().numpy() if flat.numel() else np.zeros(0, np.uint8)
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _on_one_device(got, want) -> bool:
    """Both torch tensors on the same device: compared there (no copy to the host)."""
    return _is_tensor(got) and _is_tensor(want) and got.device == want.device


def _flat_host(a) -> np.ndarray:
    """The elements of `a` as a flat host array (floating tensors as float64: numpy has no
    bfloat16), integers in their own type."""
    if _is_tensor(a):
        a = a.detach().cpu()
        return (a.double() if a.dtype.is_floating_point else a).reshape(-1).numpy()
    return np.asarray(a).reshape(-1)


def _is_integer(a) -> bool:
    if _is_tensor(a):
        return not a.dtype.is_floating_point and not a.dtype.is_complex
    return np.asarray(a).dtype.kind in "iub"


def _report(bad, got, want, what: str) -> str | None:
    """None when no element is marked in `bad` (a flat numpy or torch mask), else how many
    are and the first of them."""
    count = int(bad.sum())
    if count == 0:
        return None
    i = int(bad.nonzero()[0][0]) if _is_tensor(bad) else int(np.flatnonzero(bad)[0])
    g, w = got.reshape(-1)[i], want.reshape(-1)[i]
    g, w = (g.item() if hasattr(g, "item") else g), (w.item() if hasattr(w, "item") else w)
    return f"{what}{count} of {bad.shape[0]} elements differ; first [{i}]: got {g!r}, want {w!r}"


def same_bits(got, want, what: str = "", nan_equal: bool = False) -> str | None:
    """None when `got` and `want` hold the same bytes, else what differs (prefixed by `what`).

    nan_equal: a NaN in both (of a floating type) counts as equal whatever its payload.
    """
    if tuple(got.shape) != tuple(want.shape):
        return f"{what}shape {tuple(got.shape)} != {tuple(want.shape)}"
    numel = int(np.prod(tuple(got.shape), dtype=np.int64))
    if numel == 0:
        return None
    if _on_one_device(got, want):
        import torch

        g = got.detach().contiguous().reshape(-1)
        w = want.detach().contiguous().reshape(-1)
        if g.element_size() != w.element_size():
            return f"{what}element sizes {g.element_size()} != {w.element_size()}"
        bad = g.view(torch.uint8).reshape(numel, -1) != w.view(torch.uint8).reshape(numel, -1)
        bad = bad.any(dim=1)
        if nan_equal and g.dtype.is_floating_point and w.dtype.is_floating_point:
            bad &= ~(g.isnan() & w.isnan())
        return _report(bad, got, want, what)
    gb, wb = as_bytes(got), as_bytes(want)
    if gb.size != wb.size:
        return f"{what}{gb.size} bytes != {wb.size} bytes (element sizes differ)"
    bad = (gb != wb).reshape(numel, -1).any(axis=1)
    if nan_equal and not _is_integer(got) and not _is_integer(want):
        g, w = _flat_host(got), _flat_host(want)
        if g.dtype.kind == "f" and w.dtype.kind == "f":  # not raw storage (bfloat16 as uint16)
            bad &= ~(np.isnan(g) & np.isnan(w))
    return _report(bad, got, want, what)


def same_values(got, want, atol: float = 0.0) -> str | None:
    """None when `got` equals `want` element by element in value (within `atol`; integers
    exactly when atol is 0; NaN equals nothing, -0.0 equals 0.0), else what differs."""
    if tuple(got.shape) != tuple(want.shape):
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    exact_ints = _is_integer(got) and _is_integer(want) and not atol
    if _on_one_device(got, want):
        g, w = got.detach().reshape(-1), want.detach().reshape(-1)
        if exact_ints:
            bad = g != w
        else:
            g, w = g.double(), w.double()
            bad = ~((g == w) | ((g - w).abs() <= atol))
    else:
        g, w = _flat_host(got), _flat_host(want)
        if exact_ints:
            bad = g != w
        else:
            g, w = g.astype(np.float64), w.astype(np.float64)
            with np.errstate(invalid="ignore"):  # inf - inf
                bad = ~((g == w) | (np.abs(g - w) <= atol))
    within = f"(atol {atol:g}) " if atol else ""
    return _report(bad, got, want, within)


def digest(a) -> str:
    """A hash of the bytes of `a`: ranks compare these to see bitwise-identical outputs."""
    return hashlib.blake2b(as_bytes(a).tobytes(), digest_size=8).hexdigest()


def poison(a):
    """Fills `a` in place (and returns it) with what no case produces, so an element the call
    under test leaves unwritten fails the comparison: NaN for floating types, POISON else."""
    if _is_tensor(a):
        a.fill_(float("nan") if a.dtype.is_floating_point else POISON)
    else:
        a.fill(np.nan if a.dtype.kind == "f" else POISON)
    return a


def relative_error(got, ref) -> float:
    """||got - ref|| / ||ref|| (||got|| when ref is zero), in float64."""
    if _is_tensor(got):
        g, r = got.double(), ref.double()
        den = float(r.norm())
        return float((g - r).norm()) / den if den > 0 else float(g.norm())
    g, r = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    den = float(np.linalg.norm(r))
    return float(np.linalg.norm(g - r)) / den if den > 0 else float(np.linalg.norm(g))


def join_problems(*problems) -> str | None:
    """The problems found (None entries dropped), joined; None when there are none."""
    found = [p for p in problems if p]
    return "; ".join(found) if found else None


# --- references of reductions over torch tensors ----------------------------------------


def combine(op: str, a, b):
    """a op b element-wise (op by name: AVG and PREMUL_SUM add; the caller scales)."""
    import torch

    if op in ("SUM", "AVG", "PREMUL_SUM"):
        return a + b
    fn = {
        "PROD": torch.mul,
        "MAX": torch.maximum,
        "MIN": torch.minimum,
        "BAND": torch.bitwise_and,
        "BOR": torch.bitwise_or,
        "BXOR": torch.bitwise_xor,
    }.get(op)
    if fn is None:
        raise ValueError(f"no reference for op {op}")
    return fn(a, b)


def reduce_in_float64(xs, op: str):
    """The reduction of every rank's input (xs[r]: rank r's tensor, PREMUL_SUM inputs already
    scaled) in float64 (integer types: exactly in int64, so a cast back wraps as the kernels
    do in their own width); AVG divides by the number of ranks (integers: toward zero)."""
    import torch

    floating = xs[0].dtype.is_floating_point
    acc = [x.double() if floating else x.to(torch.int64) for x in xs]
    out = acc[0].clone()
    for x in acc[1:]:
        out = combine(op, out, x)
    if op == "AVG":
        out = out / len(xs) if floating else torch.div(out, len(xs), rounding_mode="trunc")
    return out


def reduce_in_rank_order(xs, op: str):
    """The reduction as the kernels compute it, in the element type: in rank order, 16-bit
    floats accumulated in float32 and rounded once, integers wrapping in their own width
    (PREMUL_SUM inputs already scaled); AVG a true division (integers: of the wrapped sum,
    toward zero)."""
    import torch

    dtype, n = xs[0].dtype, len(xs)
    if dtype in (torch.float16, torch.bfloat16):
        acc_t = torch.float32
    elif dtype.is_floating_point:
        acc_t = dtype
    else:
        acc_t = torch.int64
    acc = xs[0].to(acc_t)
    for x in xs[1:]:
        acc = combine(op, acc, x.to(acc_t))
    if op == "AVG":
        if dtype.is_floating_point:
            acc = acc / torch.full_like(acc, n)  # a true division, as the kernel's
        else:
            wrapped = acc.to(dtype).to(torch.int64)
            acc = torch.div(wrapped, n, rounding_mode="trunc")
    return acc.to(dtype)


# --- the parent's side ------------------------------------------------------------------


def assert_cases(results, expect_cases: int | None = None, same_on_all_ranks: bool = True) -> None:
    """Asserts on what every rank returned: {case: (digest, problem or None)}, one dict per
    rank (`results`: a launch's RankResults or their values).

    Every rank ran the same cases in the same order, none reported a problem, and where the
    collective's output is the same everywhere (`same_on_all_ranks`, and a digest given: ""
    means not compared) every rank's output has the same bits. The message names every
    failing case."""
    values = [r.value if hasattr(r, "value") else r for r in results]
    keys = list(values[0])
    assert keys, "no cases ran"
    if expect_cases is not None:
        assert len(keys) == expect_cases, f"{len(keys)} cases ran, expected {expect_cases}"
    failures = []
    for r, v in enumerate(values):
        assert list(v) == keys, f"rank {r} ran different cases"
    for k in keys:
        problems = [f"rank {r}: {v[k][1]}"[:400] for r, v in enumerate(values) if v[k][1]]
        if problems:
            failures.append(f"{k}: {'; '.join(problems)}")
        elif same_on_all_ranks and len({v[k][0] for v in values}) != 1:
            failures.append(f"{k}: ranks' outputs differ bitwise")
    assert not failures, f"{len(failures)} of {len(keys)} cases failed:\n" + "\n".join(failures)


# --- ports ----------------------------------------------------------------------------


def free_port() -> int:
    """MASTER_PORT for ranks started here: it and the port after it free, outside the
    kernel's ephemeral range (rcclx_core._testing.free_port_run says why)."""
    return free_port_run(2)
