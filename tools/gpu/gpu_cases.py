"""What the GPU checks share: seeded inputs every rank can rebuild for every rank, float64
references, the comparison (two ranks: exact; more: a relative error bound), digests for
bitwise identity across ranks, one all_reduce checked end to end, and expected errors.

Used by allreduce_check.py, allreduce_symmetric.py and collectives_check.py.
"""

from __future__ import annotations

import hashlib

from gpu_common import combine_pair

BITWISE = ("BAND", "BOR", "BXOR")
# Relative error bounds of ||out - ref|| / ||ref|| (the kernels accumulate 16-bit floats in fp32).
TOL = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-6, "float64": 1e-13}


def premul_scalar(rank: int) -> float:
    """Rank r's PREMUL_SUM scalar: a different one per rank, of both signs, inexact in binary."""
    return (rank + 1) / 3.0 * (-1) ** rank


def premul_input(torch, x, rank):
    """Rank r's input scaled as the kernels scale it: in float64, rounded to the accumulator
    type (float32 for 16-bit floats), then to the element type."""
    acc_t = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    return (x.double() * premul_scalar(rank)).to(acc_t).to(x.dtype)


def make_input(torch, dtype, count, op, seed, rank, device):
    """Rank `rank`'s input of a case (seeded by case and rank): random bit patterns for the
    bitwise operators, values near 1 for PROD, small integers for integer types."""
    g = torch.Generator(device=device).manual_seed(seed * 1009 + rank)
    if op in BITWISE:  # every bit pattern, so each byte of every width is exercised
        nbytes = count * dtype.itemsize
        b = torch.randint(0, 256, (nbytes,), generator=g, device=device, dtype=torch.int64)
        return b.to(torch.uint8).view(dtype)
    if dtype.is_floating_point:
        if op == "PROD":
            x = 1.0 + 0.05 * torch.randn(count, generator=g, device=device, dtype=torch.float64)
        else:
            x = torch.randn(count, generator=g, device=device, dtype=torch.float64)
        return x.to(dtype)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-100, 101)
    if dtype in (torch.uint32, torch.uint64):
        lo, hi = 0, 1000
    return torch.randint(lo, hi, (count,), generator=g, device=device, dtype=torch.int64).to(dtype)


def reference(torch, dtype, count, op, seed, nranks, device):
    """The allreduce of every rank's input in float64 (integers: int64, wrapping as the
    kernels do in their own width once cast back)."""
    xs = [make_input(torch, dtype, count, op, seed, r, device) for r in range(nranks)]
    if op == "PREMUL_SUM":
        acc = [premul_input(torch, x, r).double() for r, x in enumerate(xs)]
    elif dtype.is_floating_point:
        acc = [x.double() for x in xs]
    else:
        acc = [x.to(torch.int64) for x in xs]
    out = acc[0].clone()
    for x in acc[1:]:
        out = combine_pair(torch, op, out, x)
    if op == "AVG":
        out = (
            out / nranks
            if dtype.is_floating_point
            else torch.div(out, nranks, rounding_mode="trunc")
        )
    return out


def compare(torch, name, dtype, out, ref, nranks):
    """None when right, else what is wrong. Floats from two ranks must be exact: every operator
    of two floats (16-bit ones combined in float32) rounds the exact result once, or in a way
    that gives the same value, so the output is the float64 reference rounded to its type."""
    if dtype.is_floating_point and nranks != 2:
        o = out.double()
        if not torch.isfinite(o).all():
            bad = (~torch.isfinite(o)).nonzero()[:4].flatten().tolist()
            return f"non-finite output at {bad} (unwritten?)"
        err = (o - ref).norm().item() / max(ref.norm().item(), 1e-30)
        return None if err <= TOL[name] else f"relative error {err:.3g} > {TOL[name]:g}"
    want = ref.to(dtype)
    if torch.equal(out, want):
        return None
    idx = (out != want).nonzero()[:4].flatten().tolist()
    wrong = (out != want).sum().item()
    return (
        f"{wrong} wrong elements, first at {idx}: got {out[idx].tolist()} want {want[idx].tolist()}"
    )


def digest(out) -> str:
    """A hash of a tensor's bytes: ranks compare these to see bitwise-identical results."""
    import torch

    return hashlib.sha1(
        out.cpu().contiguous().view(-1).view(dtype=torch.uint8).numpy().tobytes()
    ).hexdigest()


def poison(torch, t):
    """Fills an output with what no case produces, so an unwritten element fails."""
    t.fill_(float("nan") if t.dtype.is_floating_point else 77)


def reduce_and_compare(torch, rc, comm, algo, name, op, x, out, ref, mode, rank):
    """Poisons `out`, all-reduces `x` into it (mode "inplace": `out` holds `x` first) on the
    current stream and compares with `ref`: None when right, else what went wrong."""
    poison(torch, out)
    stream = torch.cuda.current_stream().cuda_stream
    kw = {"scalar": premul_scalar(rank)} if op == "PREMUL_SUM" else {}
    try:
        if mode == "inplace":
            out.copy_(x)
            comm.all_reduce(out, op=getattr(rc.RedOp, op), algo=algo, stream=stream, **kw)
        else:
            comm.all_reduce(x, out, op=getattr(rc.RedOp, op), algo=algo, stream=stream, **kw)
        torch.cuda.synchronize()
        return compare(torch, name, getattr(torch, name), out, ref, comm.size)
    except Exception as e:  # noqa: BLE001 - reported per case
        return f"{type(e).__name__}: {e}"


def raises(fn, kind):
    """Whether fn() raises `kind`."""
    try:
        fn()
    except kind:
        return True
    return False


def invalid_argument_problem(torch, rc, fn, needles):
    """None when fn() raises InvalidArgumentError with every needle in its message, else what
    happened instead."""
    try:
        fn()
        torch.cuda.synchronize()
        return "no error raised"
    except rc.InvalidArgumentError as e:
        missing = [s for s in needles if s not in str(e)]
        return f"message lacks {missing}: {e}" if missing else None
    except Exception as e:  # noqa: BLE001 - reported per case
        return f"{type(e).__name__}: {e}"


def expandable_tensor(torch, dev):
    """A 384 MiB uint8 tensor in a new expandable segment of torch's allocator (cuMemCreate
    memory, which has no legacy IPC handle), or None when torch did not put it in one."""
    settings = getattr(torch._C, "_accelerator_setAllocatorSettings", None)
    settings = settings or torch.cuda.memory._set_allocator_settings
    settings("expandable_segments:True")
    try:
        # Larger than any cached block, so the allocator maps a new (expandable) segment.
        t = torch.empty(3 * (1 << 27) + 4096, dtype=torch.uint8, device=dev)
    finally:
        settings("expandable_segments:False")
    ptr = t.data_ptr()
    segments = [
        s
        for s in torch.cuda.memory_snapshot()
        if s["device"] == dev.index and s["address"] <= ptr < s["address"] + s["total_size"]
    ]
    return t if segments and segments[0].get("is_expandable", False) else None
