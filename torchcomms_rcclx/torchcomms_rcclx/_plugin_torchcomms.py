"""The ``torchcomms.backends`` entry point: torchcomms imports this module to find ``"rcclx"``."""

import torchcomms

from torchcomms_rcclx._register import register

register(torchcomms)
