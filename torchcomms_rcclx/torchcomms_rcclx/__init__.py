"""RCCLX for PyTorch: a torchcomms-style communicator and a ``torch.distributed`` backend.

The only RCCLX package that imports torch; it checks tensors, takes the current stream and
hands pointers to ``rcclx_core``. The communicator and the backend are being written; this
release is the package skeleton.
"""

__version__ = "0.1.0"
