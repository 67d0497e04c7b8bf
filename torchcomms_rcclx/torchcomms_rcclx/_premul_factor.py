"""PREMUL_SUM's factor out of torchcomms' own ``ReduceOp``, which torchcomms does not expose to
Python: its pybind11 class binds ``type`` only, yet torch.distributed hands FSDP2's
``PREMUL_SUM(1 / factor)`` to a Python backend as such an object.

The C++ object is reached through pybind11's cross-module conduit (``_pybind11_conduit_v1_``,
the documented way for one extension to borrow another's object), given the ``type_info`` of
``torch::comms::ReduceOp`` from the library that binds it. Its layout is torchcomms' (a
``RedOpType``, then ``std::optional<std::variant<at::Tensor, double>>``), so the reader checks
itself on objects of known value before it is trusted; a build that lays the class out
otherwise gets a clear error, never a wrong factor. A factor held as a tensor cannot be turned
back into a Python tensor here and is refused with the way around it.
"""

from __future__ import annotations

import ctypes
import os
import sys

import rcclx_core

_TYPE_INFO = "_ZTIN5torch5comms8ReduceOpE"  # typeinfo for torch::comms::ReduceOp
_CPP_NAME = b"N5torch5comms8ReduceOpE"  # its name(): what the conduit names its capsule
# pybind11's platform ABI ids of gcc / libstdc++ builds: pybind11 3, then pybind11 2.11-2.13.
_ABI_IDS = (
    b"system_libstdcpp_gxx_abi_1xxx_use_cxx11_abi_1",
    *(f"_gcc_libstdcpp_cxxabi10{n:02d}".encode() for n in range(2, 21)),
)
# Offsets in torch::comms::ReduceOp (x86-64 / aarch64, libstdc++).
_TYPE_AT, _VALUE_AT, _INDEX_AT, _ENGAGED_AT = 0, 8, 16, 24
_PREMUL_SUM, _DOUBLE_INDEX = 7, 1  # RedOpType::PREMUL_SUM; the variant's double alternative

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = (ctypes.py_object, ctypes.c_char_p)
_TYPE_INFO_NAME = ctypes.c_char_p(b"St9type_info")  # typeid(std::type_info).name()


class _Reader:
    """Reads the C++ fields of one ReduceOp class (torchcomms', or torch.comms')."""

    def __init__(self, cls):
        self._type_info = _capsule_new(_type_info_address(cls), _TYPE_INFO_NAME, None)
        self._abi = next((a for a in _ABI_IDS if self._conduit(cls.SUM, a) is not None), None)
        if self._abi is None:
            raise LookupError("its pybind11 conduit answers none of the known platform ABI ids")
        if self._fields(cls.PREMUL_SUM(0.375)) != (_PREMUL_SUM, True, _DOUBLE_INDEX, 0.375):
            raise LookupError("PREMUL_SUM(0.375) does not read back as 0.375")
        if self._fields(cls.SUM)[:2] != (0, False):
            raise LookupError("SUM does not read back as SUM without a factor")

    def _conduit(self, op, abi: bytes):
        return op._pybind11_conduit_v1_(abi, self._type_info, b"raw_pointer_ephemeral")

    def _fields(self, op) -> tuple[int, bool, int, float]:
        """(operator, has a factor, which alternative, the factor if a double)."""
        address = _capsule_pointer(self._conduit(op, self._abi), _CPP_NAME)
        return (
            ctypes.c_int.from_address(address + _TYPE_AT).value,
            ctypes.c_bool.from_address(address + _ENGAGED_AT).value,
            ctypes.c_ubyte.from_address(address + _INDEX_AT).value,
            ctypes.c_double.from_address(address + _VALUE_AT).value,
        )

    def factor(self, op) -> float | None:
        kind, engaged, index, value = self._fields(op)
        if kind != _PREMUL_SUM or not engaged:
            return None
        return value if index == _DOUBLE_INDEX else _TENSOR


_TENSOR = object()  # a factor held as a tensor
_readers: dict = {}  # class -> _Reader, or the LookupError that made one impossible


def _type_info_address(cls) -> int:
    """Where the typeinfo of torch::comms::ReduceOp lies, in the library that binds `cls`."""
    for path in _libraries(cls):
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
            return ctypes.addressof(ctypes.c_char.in_dll(library, _TYPE_INFO))
        except (OSError, ValueError):
            continue
    raise LookupError(f"no loaded library exports {_TYPE_INFO}")


def _libraries(cls) -> list[str]:
    """The files that may bind `cls`: torchcomms' extension, or torch's own library."""
    paths = []
    for name in ("torchcomms._comms", "torch._C"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            paths.append(module.__file__)
    torch = sys.modules.get("torch")
    if torch is not None:
        paths.append(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_python.so"))
    return paths


def premul_factor(op, what: str) -> float:
    """The factor of `op`, a torchcomms ``ReduceOp.PREMUL_SUM(factor)``."""
    cls = type(op)
    reader = _readers.get(cls)
    if reader is None:
        try:
            reader = _Reader(cls)
        except LookupError as e:
            reader = e
        _readers[cls] = reader
    if isinstance(reader, LookupError):
        raise rcclx_core.InvalidArgumentError(
            f"{what}: cannot read the factor of {cls.__module__}.ReduceOp.PREMUL_SUM ({reader}); "
            "call the backend directly with torchcomms_rcclx.ReduceOp.PREMUL_SUM(factor) "
            "(comm.get_backend_impl())"
        )
    factor = reader.factor(op)
    if factor is _TENSOR:
        raise rcclx_core.InvalidArgumentError(
            f"{what}: ReduceOp.PREMUL_SUM with a tensor factor cannot cross torchcomms' Python "
            "backend interface; pass the factor as a number, or call the backend directly "
            "with torchcomms_rcclx.ReduceOp.PREMUL_SUM(tensor) (comm.get_backend_impl())"
        )
    if factor is None:
        raise rcclx_core.InvalidArgumentError(f"{what}: op {op!r} is not a PREMUL_SUM")
    return factor
