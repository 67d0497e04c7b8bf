"""The ``torch.distributed`` backend ``"rcclx"``: importing this module registers it.

    import torchcomms_rcclx.c10d
    torch.distributed.init_process_group("rcclx")   # or "cpu:rcclx,cuda:rcclx"

Registration is skipped quietly where torch.distributed is unavailable (a torch build without
it), so importing this module never fails for that reason; ``REGISTERED`` says whether it took
place.
"""

from __future__ import annotations

BACKEND_NAME = "rcclx"
REGISTERED = False


def _register() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    if not dist.is_available():
        return False
    from torchcomms_rcclx.c10d.process_group import create_process_group

    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(
            BACKEND_NAME, create_process_group, extended_api=True, devices=["cpu", "cuda"]
        )
    return True


REGISTERED = _register()

__all__ = ["BACKEND_NAME", "REGISTERED"]
