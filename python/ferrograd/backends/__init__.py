"""``ferrograd.backends``: the switches PyTorch scripts set for reproducibility.

``backends.cudnn.deterministic``/``benchmark`` are accepted and kept (there is
no cuDNN, so they change nothing: ferrograd's CPU kernels are deterministic);
``backends.cuda.matmul.allow_tf32`` likewise; ``backends.mps.is_available()``
and ``backends.cuda.is_built()`` are ``False``. ``backends.cpu`` reports the
CPU's capability and chooses the bfloat16 matrix product path.
"""

from . import cpu, cuda, cudnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mps"]
