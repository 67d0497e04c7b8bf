"""What the GPU tests share: how many GPUs a test needs, a rank's GPU, seeded inputs every rank
rebuilds for every rank, the allreduce reference and comparison, the per-case recorder a rank
returns to the parent, expected errors, and the stalled-peer measurement.

Imported by the test modules after torch (they skip without it) and by their ranks.
"""

from __future__ import annotations

import time

import checks
import pytest
import torch

import rcclx_core as rc
from launcher import gpu_count

BITWISE = ("BAND", "BOR", "BXOR")
# Relative error bounds of ||out - ref|| / ||ref|| with more than two ranks (the kernels
# accumulate 16-bit floats in fp32); two ranks are compared exactly.
TOL = {"bfloat16": 1e-2, "float16": 2e-3, "float32": 1e-6, "float64": 1e-13}


def require_gpus_per_rank(nranks: int) -> None:
    """Skips the calling test unless each of `nranks` ranks gets a GPU of its own. Only what
    reads per-GPU state (free device memory) or drives several GPUs from one process needs
    that; everything else runs with ranks sharing GPUs (rank r on GPU r % GPUs)."""
    have = gpu_count()
    if have < nranks:
        pytest.skip(f"needs a GPU per rank: {nranks} ranks, {have} GPU(s) on this machine")


def rank_device(ctx) -> torch.device:
    """Makes this rank's GPU current and returns it."""
    torch.cuda.set_device(ctx.device)
    return torch.device("cuda", ctx.device)


def current_stream() -> int:
    return torch.cuda.current_stream().cuda_stream


def name_of(dtype: torch.dtype) -> str:
    return str(dtype).split(".")[-1]


# --- inputs and references -----------------------------------------------------------------


def premul_scalar(rank: int) -> float:
    """Rank r's PREMUL_SUM scalar: a different one per rank, of both signs, inexact in binary."""
    return (rank + 1) / 3.0 * (-1) ** rank


def premul_input(x, rank: int):
    """Rank r's input scaled as the kernels scale it: in float64, rounded to the accumulator
    type (float32 for 16-bit floats), then to the element type."""
    acc_t = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    return (x.double() * premul_scalar(rank)).to(acc_t).to(x.dtype)


def make_input(dtype, count: int, op: str, seed: int, rank: int, device):
    """Rank `rank`'s input of a case (seeded by case and rank): random bit patterns for the
    bitwise operators, values near 1 for PROD, small integers for integer types."""
    g = torch.Generator(device=device).manual_seed(seed * 1009 + rank)
    if op in BITWISE:  # every bit pattern, so each byte of every width is exercised
        nbytes = count * dtype.itemsize
        b = torch.randint(0, 256, (nbytes,), generator=g, device=device, dtype=torch.int64)
        return b.to(torch.uint8).view(dtype)
    if dtype.is_floating_point:
        x = torch.randn(count, generator=g, device=device, dtype=torch.float64)
        return (1.0 + 0.05 * x if op == "PROD" else x).to(dtype)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-100, 101)
    return torch.randint(lo, hi, (count,), generator=g, device=device, dtype=torch.int64).to(dtype)


def scaled_inputs(xs, op: str):
    """xs (every rank's input) as the reduction sees them: PREMUL_SUM scales each rank's."""
    return [premul_input(x, r) for r, x in enumerate(xs)] if op == "PREMUL_SUM" else xs


def all_reduce_reference(dtype, count: int, op: str, seed: int, nranks: int, device):
    """The allreduce of every rank's input of a case, in float64 (integers: int64)."""
    xs = [make_input(dtype, count, op, seed, r, device) for r in range(nranks)]
    return checks.reduce_in_float64(scaled_inputs(xs, op), op)


def compare(out, ref, nranks: int) -> str | None:
    """None when `out` matches the float64 reference, else what is wrong. Floats from two
    ranks must be exact: every operator of two floats (16-bit ones combined in float32) rounds
    the exact result once, so the output is the reference rounded to its type. With more
    ranks, floats get the relative error bound TOL."""
    if out.dtype.is_floating_point and nranks != 2:
        o = out.double()
        if not torch.isfinite(o).all():
            bad = (~torch.isfinite(o)).nonzero()[:4].flatten().tolist()
            return f"non-finite output at {bad} (unwritten?)"
        err, bound = checks.relative_error(o, ref), TOL[name_of(out.dtype)]
        return None if err <= bound else f"relative error {err:.3g} > {bound:g}"
    return checks.same_values(out, ref.to(out.dtype))


# --- a rank's cases ------------------------------------------------------------------------


class Cases:
    """One rank's cases in the order it ran them: `results` is {case: (digest, problem)} for
    checks.assert_cases (every rank runs the same cases in the same order; a digest, compared
    across ranks, only for cases whose output is the same on every rank and which passed)."""

    def __init__(self):
        self.results: dict[str, tuple[str, str | None]] = {}

    def record(self, label: str, problem: str | None, out=None) -> None:
        assert label not in self.results, f"case {label!r} recorded twice"
        hashed = checks.digest(out) if problem is None and out is not None else ""
        self.results[label] = (hashed, problem)

    def run(self, label: str, fn, same_on_all_ranks: bool = False) -> None:
        """fn() enqueues the call and returns (out, want); compared bitwise after a
        synchronize (want None: nothing to compare on this rank). Exceptions are the case's
        problem."""
        try:
            out, want = fn()
            torch.cuda.synchronize()
            problem = None if want is None else checks.same_bits(out, want)
        except Exception as e:  # noqa: BLE001 - reported per case
            problem, out = f"{type(e).__name__}: {str(e)[:300]}", None
        self.record(label, problem, out if same_on_all_ranks else None)


def error_problem(fn, kind, needles) -> str | None:
    """None when fn() raises `kind` with every needle in its message, else what happened."""
    try:
        fn()
        torch.cuda.synchronize()
        return "no error raised"
    except kind as e:
        missing = [s for s in needles if s not in str(e)]
        return f"message lacks {missing}: {e}" if missing else None
    except Exception as e:  # noqa: BLE001 - reported per case
        return f"{type(e).__name__}: {e}"


def invalid_argument_problem(fn, *needles) -> str | None:
    """None when fn() raises InvalidArgumentError naming every needle, else what happened."""
    return error_problem(fn, rc.InvalidArgumentError, needles)


def expandable_tensor(dev):
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


# --- a peer that never comes ---------------------------------------------------------------

STALL_TIMEOUT_MS = 2000  # RCCLX_TIMEOUT_MS of the stalled-peer launches
STALL_LIMIT_S = 15.0  # the error must come well within this


def stalled_call(ctx, comm, call) -> dict | None:
    """Rank 0 runs call() (then synchronizes, then asks comm.check_failed()), which needs a peer
    that never takes part: the other ranks wait (communicator alive, not calling) until rank 0
    is done. The kernel's wait ends at the timeout, the kernel returns and the stream drains;
    the failure raises from check_failed() (or any later call). Rank 0 returns
    {"error": what was raised or None, "seconds": how long it took}."""
    store = ctx.store()
    if ctx.rank != 0:
        store.get("stalled/done", timeout_ms=STALL_TIMEOUT_MS + 30_000)
        return None
    t0 = time.monotonic()
    try:
        call()
        torch.cuda.synchronize()
        comm.check_failed()
        error = None
    except Exception as e:  # noqa: BLE001 - the expected outcome
        error = f"{type(e).__name__}: {e}"[:300]
    outcome = {"error": error, "seconds": time.monotonic() - t0}
    store.set("stalled/done", b"1")
    return outcome


def assert_stalled_error(outcome: dict, what: str) -> None:
    assert outcome["error"] is not None, f"{what} without its peer completed: {outcome}"
    assert outcome["seconds"] < STALL_LIMIT_S, (
        f"{what}: the error took {outcome['seconds']:.1f} s for a {STALL_TIMEOUT_MS} ms timeout"
    )


# --- one all_reduce checked end to end -----------------------------------------------------


def all_reduce_problem(comm, algo, op: str, x, out, ref, mode: str, rank: int) -> str | None:
    """Poisons `out`, all-reduces `x` into it (mode "inplace": `out` holds `x` first) on the
    current stream and compares with the float64 reference: None when right, else what went
    wrong."""
    checks.poison(out)
    kw = {"scalar": premul_scalar(rank)} if op == "PREMUL_SUM" else {}
    rop = getattr(rc.RedOp, op)
    try:
        if mode == "inplace":
            out.copy_(x)
            comm.all_reduce(out, op=rop, algo=algo, stream=current_stream(), **kw)
        else:
            comm.all_reduce(x, out, op=rop, algo=algo, stream=current_stream(), **kw)
        torch.cuda.synchronize()
        return compare(out, ref, comm.size)
    except Exception as e:  # noqa: BLE001 - reported per case
        return f"{type(e).__name__}: {e}"
