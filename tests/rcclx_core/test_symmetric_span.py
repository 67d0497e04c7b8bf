"""register_symmetric's Python side, with no GPU: the span it maps, computed from a
``__cuda_array_interface__``, and a registered buffer's life (over a stand-in communicator)."""

import pytest

from ctran import InvalidUsageError
from rcclx_core.symmetric import SymmetricBuffer, _device_span


class _Array:
    def __init__(self, ptr, shape, typestr, strides=None):
        self.__cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": typestr,
            "strides": strides,
            "version": 3,
        }


@pytest.mark.parametrize(
    "array, span",
    [
        (_Array(4096, (10,), "<f4"), (4096, 40)),
        (_Array(4096, (3, 4), "<f2"), (4096, 24)),
        # every other row of a 6 x 4 float32 matrix: from the first element to the last
        (_Array(4096, (3, 4), "<f4", (32, 4)), (4096, 4 * (2 * 8 + 3 + 1))),
        # reversed: the first element is the highest one
        (_Array(4096, (10,), "<f4", (-4,)), (4096 - 36, 40)),
        (_Array(4096, (2, 5), "<f8", (-40, 8)), (4096 - 40, 80)),
        (_Array(4096, (0, 7), "<f4"), (4096, 0)),
    ],
)
def test_device_span(array, span):
    assert _device_span(array) == span


class _Comm:
    """Records the collective calls a SymmetricBuffer makes."""

    device = 0

    def __init__(self):
        self.calls = []

    def _register_symmetric(self, ptr, nbytes):
        self.calls.append(("register", ptr, nbytes))

    def _free_symmetric(self, ptr):
        self.calls.append(("free", ptr))


def test_registered_buffer_life():
    comm, array = _Comm(), _Array(8192, (16,), "<f8")
    buf = SymmetricBuffer(comm, source=array)
    assert buf.registered and buf.nbytes == 128 and buf.ptr == 8192
    with pytest.raises(InvalidUsageError, match="deregister"):
        buf.free()
    buf.deregister()
    assert comm.calls == [("register", 8192, 128), ("free", 8192)]
    assert buf.registered and "registered, released" in repr(buf)
    with pytest.raises(InvalidUsageError, match="already released"):
        buf.deregister()
    assert len(comm.calls) == 2
