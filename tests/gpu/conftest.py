"""GPU tests' setup: on a machine with a GPU the fork server imports torch once, instead of
every rank of every launch (importing torch does not initialise CUDA, so the server stays safe
to fork ranks that use the GPU)."""

import launcher

if launcher.gpu_count() > 0:
    launcher.preload("torch")
