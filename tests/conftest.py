"""Shared pytest setup: puts tests/ on sys.path so tests (and forkserver ranks) import launcher."""

import os
import sys

_TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

import launcher  # noqa: E402 - needs the path above

# Ranks unpickle their function by importing its test module, which imports pytest: have the
# fork server import pytest once, instead of every rank of every launch (~0.2 s each).
_preload = getattr(launcher, "_PRELOAD", None)
if isinstance(_preload, list) and "pytest" not in _preload:
    _preload.append("pytest")
