"""Fixtures of the ctran tests."""

import pytest
from ctran_helpers import ucx_library


@pytest.fixture
def ucx():
    """Skips the test, saying why, when ctran cannot load libucp here (needs_ucx asks for it)."""
    loaded, missing = ucx_library()
    if not loaded:
        pytest.skip(f"no usable UCX: {missing}")
