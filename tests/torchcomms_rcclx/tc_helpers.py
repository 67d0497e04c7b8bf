"""Shared by the torchcomms_rcclx tests: a communicator per rank through new_comm, the inputs
every rank can recompute for every other rank, and references of the reductions.

Inputs are small integers (|x| <= 5), so sums, maxima and PREMUL_SUM by 0.5 are exact in
float32 and bfloat16 on 2 or 3 ranks and the results are compared bitwise; AVG rounds once or
twice (a division, then bfloat16) and is compared within one unit in the last place of the
type (AVG_ATOL); integer AVG truncates toward zero.
"""

from __future__ import annotations

import os

import checks
import torch

import torchcomms_rcclx as tc

DTYPES = (torch.float32, torch.int32, torch.int8, torch.bfloat16)
COUNTS = (0, 4, 1024)
OPS = ("SUM", "MAX", "AVG", "PREMUL_SUM")
FACTOR = 0.5
AVG_ATOL = {torch.float32: 1e-6 * 5, torch.bfloat16: 2.0**-7 * 5, torch.int32: 0.0, torch.int8: 0.0}


def comm_of(ctx, name: str = "tc", device="cpu", **kw) -> tc.TorchCommRCCLX:
    """This rank's communicator of the launch: rank and size from TORCHCOMM_*, the launch's
    store; timeouts and failures raise (they do not abort the process)."""
    os.environ["TORCHCOMM_RANK"] = str(ctx.rank)
    os.environ["TORCHCOMM_SIZE"] = str(ctx.nranks)
    kw.setdefault("abort_process_on_timeout_or_error", False)
    kw.setdefault("store", ctx.store())
    return tc.new_comm("rcclx", device, name, **kw)


def make(rank: int, count: int, dtype, salt: int = 0, device="cpu") -> torch.Tensor:
    """Rank `rank`'s input: small integers in [-5, 5] (in [0, 10] for unsigned types)."""
    x = (torch.arange(count, dtype=torch.int64) * 7 + rank * 3 + salt * 5) % 11 - 5
    return x.to(dtype=dtype, device=device)


def op_of(name: str, tensor_factor: bool = False, device="cpu") -> tc.ReduceOp:
    if name == "PREMUL_SUM":
        f = torch.tensor([FACTOR], device=device) if tensor_factor else FACTOR
        return tc.ReduceOp.PREMUL_SUM(f)
    return getattr(tc.ReduceOp, name)


def reference(inputs, op: str) -> torch.Tensor:
    """op over `inputs` (one tensor per rank) in float64 (int64 for integers), in their type."""
    dtype = inputs[0].dtype
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    xs = torch.stack([x.cpu().to(wide) for x in inputs])
    if op == "SUM":
        r = xs.sum(0)
    elif op == "MAX":
        r = xs.max(0).values if xs.numel() else xs.sum(0)
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
    return checks.same_bits(got.cpu(), want.cpu())


def name_of(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]
