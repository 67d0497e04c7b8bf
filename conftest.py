"""Repository-wide pytest hooks: tests marked ``gpu`` are skipped when no GPU is usable."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def _gpu_unavailable_reason() -> str | None:
    """None when a GPU is usable, else why not (asked of ctran, which never needs a driver)."""
    try:
        import ctran
    except ImportError as e:
        return f"no GPU check possible: ctran is not installed ({e})"
    count, why = ctran.cuda_device_count()
    return None if count > 0 else why or "no GPU"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = _gpu_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)
