"""torchcomms_rcclx tests' setup: the fork server imports torch, torchcomms (the real one or the
stand-in) and torchcomms_rcclx once, instead of every rank of every launch (importing them does
not initialise CUDA)."""

import importlib.util

import launcher

if importlib.util.find_spec("torch") is not None:
    launcher.preload("torch", "torchcomms", "torchcomms_rcclx", "torchcomms_rcclx._create")
