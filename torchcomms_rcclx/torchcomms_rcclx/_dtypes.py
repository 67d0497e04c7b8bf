"""How each torch dtype travels through rcclx_core, decided once per (dtype, operator).

The core's own element types (int8/uint8/int32/int64/uint32/uint64, float16/32/64, bfloat16,
float8 e4m3fn/e5m2) go as they are. The rest follow torch.distributed's NCCL backend, so that
programs written for it run unchanged:

- ``bool`` travels as bytes; a SUM of booleans is their OR (the core's MAX on 0/1 bytes, as
  NCCL does, so no byte overflows), PRODUCT / MIN / MAX / bitwise ops work on 0/1 directly, and
  AVG and PREMUL_SUM are refused (their results are not booleans).
- complex tensors travel as pairs of reals; reductions that are linear (SUM, AVG, PREMUL_SUM
  by a real factor) work on the pairs, the others (MAX, MIN, PRODUCT, bitwise) are refused.
- every other dtype (int16, uint16, the fnuz float8 types, ...) travels as bytes: collectives
  that move data take it, reductions refuse it.

``wire`` is what a call passes as the core's ``dtype=`` (None: the tensor's own type), ``scale``
how many core elements one tensor element is (element counts given in rows are multiplied).
"""

from __future__ import annotations

from typing import NamedTuple

import torch

import rcclx_core
from torchcomms_rcclx._ops import RedOpType, ReduceOp

_NATIVE = frozenset(
    {
        torch.int8,
        torch.uint8,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.float32,
        torch.float64,
        torch.bfloat16,
        *(getattr(torch, n) for n in ("uint32", "uint64") if hasattr(torch, n)),
        *(getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)),
    }
)
_COMPLEX_PARTS = {
    torch.complex64: rcclx_core.DataType.FLOAT32,
    torch.complex128: rcclx_core.DataType.FLOAT64,
    **({torch.complex32: rcclx_core.DataType.FLOAT16} if hasattr(torch, "complex32") else {}),
}
_LINEAR = frozenset({RedOpType.SUM, RedOpType.AVG, RedOpType.PREMUL_SUM})
_BOOL_REFUSED = frozenset({RedOpType.AVG, RedOpType.PREMUL_SUM})
_UINT8 = int(rcclx_core.DataType.UINT8)


class Wire(NamedTuple):
    """How a tensor of one dtype travels (see the module docstring)."""

    wire: int | None  # the core's dtype= (a DataType value), None for the tensor's own
    scale: int  # core elements per tensor element


_NATIVE_WIRE = Wire(None, 1)
_MOVES: dict = {}  # dtype -> Wire
_REDUCTIONS: dict = {}  # (dtype, RedOpType) -> (Wire, the core's operator code)


def for_move(dtype) -> Wire:
    """How a collective that only moves data carries `dtype`: every dtype travels."""
    wire = _MOVES.get(dtype)
    if wire is None:
        wire = _MOVES[dtype] = _move_wire(dtype)
    return wire


def _move_wire(dtype) -> Wire:
    if dtype in _NATIVE:
        return _NATIVE_WIRE
    parts = _COMPLEX_PARTS.get(dtype)
    if parts is not None:
        return Wire(int(parts), 2)
    return Wire(_UINT8, dtype.itemsize)


def for_reduction(what: str, name: str, dtype, op: ReduceOp) -> tuple[Wire, int]:
    """How a reduction by `op` carries `dtype`, and the core operator it runs; raises
    InvalidArgumentError naming the call, the argument and the dtype when it cannot."""
    key = (dtype, op.type)
    found = _REDUCTIONS.get(key)
    if found is None:
        found = _REDUCTIONS[key] = _reduction(what, name, dtype, op)
    return found


def _reduction(what: str, name: str, dtype, op: ReduceOp) -> tuple[Wire, int]:
    kind = op.type
    if dtype in _NATIVE:
        return _NATIVE_WIRE, op.code
    if dtype == torch.bool:
        if kind in _BOOL_REFUSED:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} has dtype torch.bool, which ReduceOp.{kind.name} cannot reduce "
                "(the result would not be a boolean)"
            )
        code = ReduceOp.MAX.code if kind is RedOpType.SUM else op.code  # OR of 0/1 bytes
        return Wire(_UINT8, 1), code
    parts = _COMPLEX_PARTS.get(dtype)
    if parts is not None:
        if kind not in _LINEAR:
            raise rcclx_core.InvalidArgumentError(
                f"{what}: {name} has dtype {dtype}, which ReduceOp.{kind.name} cannot reduce "
                "(complex tensors reduce by SUM, AVG or PREMUL_SUM only)"
            )
        return Wire(int(parts), 2), op.code
    raise rcclx_core.InvalidArgumentError(
        f"{what}: {name} has dtype {dtype}, which rcclx moves but cannot reduce (reductions "
        "take bool, integers of 8, 32 and 64 bits, float16/32/64, bfloat16, float8 e4m3fn/e5m2 "
        "and complex)"
    )
