"""Shared pytest setup (pytest.ini puts tests/ on the import path, for the tests and for the
fork server's ranks, which import launcher, checks and lp_model from there)."""

import launcher

# Ranks unpickle their function by importing its test module, which imports pytest: have the
# fork server import pytest once, instead of every rank of every launch (~0.2 s each).
launcher.preload("pytest")
