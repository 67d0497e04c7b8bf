"""ReduceOp: torchcomms' reduction operators, each carrying the rcclx_core.RedOp it maps to
(and PREMUL_SUM's factor, a number or a one-element tensor read when the call runs)."""

from __future__ import annotations

import enum
import numbers

import rcclx_core


class RedOpType(enum.Enum):
    """The kind of a :class:`ReduceOp` (``op.type``)."""

    SUM = enum.auto()
    PRODUCT = enum.auto()
    MIN = enum.auto()
    MAX = enum.auto()
    BAND = enum.auto()
    BOR = enum.auto()
    BXOR = enum.auto()
    PREMUL_SUM = enum.auto()
    AVG = enum.auto()


_CORE = {
    RedOpType.SUM: rcclx_core.RedOp.SUM,
    RedOpType.PRODUCT: rcclx_core.RedOp.PROD,
    RedOpType.MIN: rcclx_core.RedOp.MIN,
    RedOpType.MAX: rcclx_core.RedOp.MAX,
    RedOpType.BAND: rcclx_core.RedOp.BAND,
    RedOpType.BOR: rcclx_core.RedOp.BOR,
    RedOpType.BXOR: rcclx_core.RedOp.BXOR,
    RedOpType.PREMUL_SUM: rcclx_core.RedOp.PREMUL_SUM,
    RedOpType.AVG: rcclx_core.RedOp.AVG,
}


class ReduceOp:
    """A reduction: ``ReduceOp.SUM``, ``PRODUCT``, ``MIN``, ``MAX``, ``BAND``, ``BOR``,
    ``BXOR``, ``AVG``, or ``ReduceOp.PREMUL_SUM(factor)`` (every rank's input multiplied by
    ``factor``, then summed)."""

    __slots__ = ("_type", "code", "factor")

    SUM: ReduceOp
    PRODUCT: ReduceOp
    MIN: ReduceOp
    MAX: ReduceOp
    BAND: ReduceOp
    BOR: ReduceOp
    BXOR: ReduceOp
    AVG: ReduceOp

    def __init__(self, type: RedOpType, factor=None):
        self._type = type
        self.code = int(_CORE[type])  # what rcclx_core's op= takes
        self.factor = factor

    @property
    def type(self) -> RedOpType:
        """Which operator this is."""
        return self._type

    @staticmethod
    def PREMUL_SUM(factor) -> ReduceOp:  # noqa: N802 - torchcomms' name
        """Sum of every rank's input times ``factor`` (a number or a one-element tensor)."""
        if isinstance(factor, bool) or not (
            isinstance(factor, numbers.Real) or _is_one_element_tensor(factor)
        ):
            raise TypeError(
                "ReduceOp.PREMUL_SUM: factor must be a real number or a one-element tensor, "
                f"got {_describe(factor)}"
            )
        return ReduceOp(RedOpType.PREMUL_SUM, factor)

    def scalar(self) -> float | None:
        """PREMUL_SUM's factor as a float (read from its tensor now); None for other ops."""
        f = self.factor
        if f is None:
            return None
        return float(f) if isinstance(f, numbers.Real) else float(f.item())

    def __eq__(self, other) -> bool:
        return isinstance(other, ReduceOp) and (self._type, self.factor) == (
            other._type,
            other.factor,
        )

    def __hash__(self) -> int:
        return hash(self._type)

    def __repr__(self) -> str:
        if self._type is RedOpType.PREMUL_SUM:
            return f"ReduceOp.PREMUL_SUM({self.factor!r})"
        return f"ReduceOp.{self._type.name}"


for _t in RedOpType:
    if _t is not RedOpType.PREMUL_SUM:
        setattr(ReduceOp, _t.name, ReduceOp(_t))


def _is_one_element_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "numel") and x.numel() == 1


def _describe(x) -> str:
    if hasattr(x, "shape"):
        return f"{type(x).__name__} of shape {tuple(x.shape)}"
    return f"{type(x).__name__} {x!r}"


# torch.distributed's RedOpType value -> ours, filled by from_c10d, and the same for torchcomms'
# RedOpType (PREMUL_SUM never: its factor differs by call), filled by as_reduce_op; keyed by the
# integer: asking an enum for its name, or hashing it, costs a microsecond a call.
C10D_OPS: dict[int, ReduceOp] = {}
TORCHCOMMS_OPS: dict[int, ReduceOp] = {}


def as_reduce_op(op, what: str) -> ReduceOp:
    """`op` as a ReduceOp: ours, torchcomms' own (the real package's, PREMUL_SUM's factor
    included), or a torch.distributed.ReduceOp / RedOpType of the same name."""
    if type(op) is ReduceOp:
        return op
    if isinstance(op, RedOpType) and op is not RedOpType.PREMUL_SUM:
        return getattr(ReduceOp, op.name)
    kind = getattr(op, "type", None)  # torchcomms' ReduceOp: its RedOpType
    if kind is not None and not isinstance(op, RedOpType):
        code = int(kind)
        found = TORCHCOMMS_OPS.get(code)
        if found is not None:
            return found
        name = getattr(kind, "name", None)
        if name == "PREMUL_SUM":
            from torchcomms_rcclx._premul_factor import premul_factor

            return ReduceOp.PREMUL_SUM(premul_factor(op, what))
        found = getattr(ReduceOp, name, None) if isinstance(name, str) else None
        if isinstance(found, ReduceOp):
            TORCHCOMMS_OPS[code] = found
            return found
    name = getattr(op, "name", None) or str(op).rsplit(".", 1)[-1]
    name = {"PRODUCT": "PRODUCT", "PROD": "PRODUCT"}.get(name, name)
    found = getattr(ReduceOp, name, None) if isinstance(name, str) else None
    if isinstance(found, ReduceOp):
        return found
    raise TypeError(f"{what}: op must be a torchcomms_rcclx.ReduceOp, got {_describe(op)}")


def from_c10d(reduce_op, what: str) -> ReduceOp:
    """torch.distributed's ReduceOp (an op object carrying ``.op``, or a RedOpType) as ours.
    PREMUL_SUM needs its factor, which only torch builds exposing ``.factor`` hand over."""
    kind = getattr(reduce_op, "op", reduce_op)
    code = int(kind)
    found = C10D_OPS.get(code)
    if found is not None:
        return found
    name = getattr(kind, "name", None)
    if name == "PREMUL_SUM":
        factor = getattr(reduce_op, "factor", None)
        if factor is None:
            raise ValueError(
                f"rcclx {what}: PREMUL_SUM needs its factor, which this torch does not expose"
            )
        return ReduceOp.PREMUL_SUM(factor)
    op = getattr(ReduceOp, name, None) if isinstance(name, str) else None
    if not isinstance(op, ReduceOp):
        raise ValueError(f"rcclx {what}: reduce op {reduce_op} is not supported")
    C10D_OPS[code] = op
    return op
