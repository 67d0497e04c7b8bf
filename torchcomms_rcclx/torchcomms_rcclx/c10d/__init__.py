"""The ``torch.distributed`` backend ``"rcclx"``: importing this module registers it.

    import torchcomms_rcclx.c10d
    torch.distributed.init_process_group("rcclx")   # or "cpu:rcclx,cuda:rcclx"

Registration is skipped quietly where torch.distributed is unavailable (a torch build without
it) or still being initialised (torch imports torchcomms while it initialises), so importing
this module never fails for those reasons; ``REGISTERED`` says whether it took place.
``import torchcomms_rcclx`` imports this module only once torch.distributed is fully imported
(the package itself touches nothing of torch).
"""

from __future__ import annotations

BACKEND_NAME = "rcclx"
REGISTERED = False


def _register() -> bool:
    try:
        import torch.distributed as dist
    except ImportError:
        return False
    if not getattr(dist, "is_available", lambda: False)():
        return False
    if not hasattr(getattr(dist, "Backend", None), "register_backend"):
        return False  # torch.distributed is still being initialised
    from torchcomms_rcclx.c10d.process_group import create_process_group

    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(
            BACKEND_NAME, create_process_group, extended_api=True, devices=["cpu", "cuda"]
        )
    return True


REGISTERED = _register()

__all__ = ["BACKEND_NAME", "REGISTERED"]
