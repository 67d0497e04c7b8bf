"""The span register_symmetric maps, computed from a ``__cuda_array_interface__`` (no GPU)."""

import pytest

from rcclx_core.symmetric import _device_span


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
