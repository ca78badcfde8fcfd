"""``ferrograd.backends``: the switches PyTorch scripts set for reproducibility.

``backends.cudnn.deterministic``/``benchmark`` are accepted and kept (there is
no cuDNN, so they change nothing: ferrograd's CPU kernels are deterministic);
``backends.mps.is_available()`` is ``False``.
"""

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
