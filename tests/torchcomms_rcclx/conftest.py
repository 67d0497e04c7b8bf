"""torchcomms_rcclx tests' setup: the fork server imports torch and torchcomms_rcclx once,
instead of every rank of every launch (importing them does not initialise CUDA)."""

import importlib.util

import launcher

if importlib.util.find_spec("torch") is not None:
    launcher.preload("torch", "torchcomms_rcclx", "torchcomms_rcclx._create")
