"""The ``torch.comms.backends`` entry point: PyTorch's ``torch.comms`` imports this module to
find ``"rcclx"``."""

import torch.comms

from torchcomms_rcclx._register import register

register(torch.comms)
