"""Shared by the torchcomms_rcclx tests: a communicator per rank through torchcomms'
``new_comm("rcclx", ...)`` (the real torchcomms where it is installed, else RCCLX's stand-in:
the same tests run on both), or the rcclx backend itself for what torchcomms' interface does not
carry; the inputs every rank can recompute for every other rank, and references of the
reductions.

Inputs are small integers (|x| <= 5), so sums, maxima and PREMUL_SUM by 0.5 are exact in
float32 and bfloat16 on 2 or 3 ranks and the results are compared bitwise; AVG rounds once or
twice (a division, then bfloat16) and is compared within one unit in the last place of the
type (AVG_ATOL); integer AVG truncates toward zero.
"""

from __future__ import annotations

import os

import checks
import torch
import torchcomms
from tc_store import LaunchStore

import torchcomms_rcclx as tc

# The real torchcomms (else the stand-in, which marks itself).
REAL_TORCHCOMMS = getattr(torchcomms, "STANDIN", None) is None
DTYPES = (
    torch.bool,
    torch.uint8,
    torch.int8,
    torch.int32,
    torch.int64,
    torch.float16,
    torch.bfloat16,
    torch.float32,
    torch.float64,
)
COUNTS = (0, 4, 1024)
OPS = ("SUM", "MAX", "MIN", "AVG", "PREMUL_SUM")
FACTOR = 0.5
AVG_ATOL = {
    torch.float16: 2.0**-10 * 5,
    torch.bfloat16: 2.0**-7 * 5,
    torch.float32: 1e-6 * 5,
    torch.float64: 1e-15 * 5,
}


def _environment(ctx, kw) -> dict:
    os.environ["TORCHCOMM_RANK"] = str(ctx.rank)
    os.environ["TORCHCOMM_SIZE"] = str(ctx.nranks)
    kw.setdefault("abort_process_on_timeout_or_error", False)
    kw.setdefault("store", LaunchStore(ctx))
    return kw


def comm_of(ctx, name: str = "tc", device="cpu", **kw):
    """This rank's torchcomms communicator of the launch (``torchcomms.new_comm("rcclx")``):
    rank and size from TORCHCOMM_*, the launch's store; timeouts and failures raise (they do
    not abort the process)."""
    return torchcomms.new_comm("rcclx", torch.device(device), name, **_environment(ctx, kw))


def backend_of(ctx, name: str = "tc", device="cpu", **kw) -> tc.TorchCommRCCLX:
    """This rank's rcclx backend of the launch, made directly (``torchcomms_rcclx.new_comm``):
    for what torchcomms' Python-backend interface does not carry (per-call hints and
    timeouts, asynchronous host calls, windows, alltoallv_dynamic)."""
    return tc.new_comm("rcclx", device, name, **_environment(ctx, kw))


def make(rank: int, count: int, dtype, salt: int = 0, device="cpu") -> torch.Tensor:
    """Rank `rank`'s input: small integers in [-5, 5] (in [0, 10] for unsigned types; booleans
    true where that integer is positive)."""
    x = (torch.arange(count, dtype=torch.int64) * 7 + rank * 3 + salt * 5) % 11 - 5
    if dtype == torch.bool:
        x = x > 0
    elif not dtype.is_signed:
        x = x + 5
    return x.to(dtype=dtype, device=device)


def reducible(dtype, op: str) -> bool:
    """Whether torch.distributed's NCCL backend (and rcclx) reduce `dtype` by `op`."""
    if op == "PREMUL_SUM":
        return dtype.is_floating_point
    return not (op == "AVG" and dtype == torch.bool)


def op_of(name: str, tensor_factor: bool = False, device="cpu"):
    """torchcomms' ReduceOp `name` (PREMUL_SUM by FACTOR: a one-element tensor when asked and
    the stand-in is in use; torchcomms' Python-backend interface carries numbers only)."""
    if name == "PREMUL_SUM":
        as_tensor = tensor_factor and not REAL_TORCHCOMMS
        f = torch.tensor([FACTOR], device=device) if as_tensor else FACTOR
        return torchcomms.ReduceOp.PREMUL_SUM(f)
    return getattr(torchcomms.ReduceOp, name)


def reference(inputs, op: str) -> torch.Tensor:
    """op over `inputs` (one tensor per rank) in float64 (int64 for integers), in their type."""
    dtype = inputs[0].dtype
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    xs = torch.stack([x.cpu().to(wide) for x in inputs])
    if op == "SUM":
        r = xs.sum(0)
    elif op == "MAX":
        r = xs.max(0).values if xs.numel() else xs.sum(0)
    elif op == "MIN":
        r = xs.min(0).values if xs.numel() else xs.sum(0)
    elif op == "PREMUL_SUM":
        r = (xs * FACTOR).sum(0)
    elif op == "AVG":
        r = (
            xs.sum(0) / len(inputs)
            if dtype.is_floating_point
            else torch.div(xs.sum(0), len(inputs), rounding_mode="trunc")
        )
    else:
        raise ValueError(op)
    return r.to(dtype)


def compare(got, want, op: str = "SUM") -> str | None:
    """Bitwise, or within AVG_ATOL for a floating AVG."""
    if op == "AVG" and want.dtype.is_floating_point:
        return checks.same_values(got.cpu(), want.cpu(), atol=AVG_ATOL[want.dtype])
    if want.dtype == torch.bool:  # bitwise on the bytes: a true byte must be exactly 1
        return checks.same_bits(got.cpu().view(torch.uint8), want.cpu().view(torch.uint8))
    return checks.same_bits(got.cpu(), want.cpu())


def name_of(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]
