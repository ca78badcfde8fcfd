"""``ferrograd.testing``: tools to prove your own ops correct, as ``torch.testing``.

* :func:`assert_close` compares tensors, numbers, sequences and mappings with
  PyTorch's per-dtype tolerances and mismatch report.
* :func:`make_tensor` makes a random tensor of a shape and dtype.
* :func:`check_op` property-tests an op's first and second derivatives against
  finite differences on hypothesis-drawn inputs (needs ``hypothesis``).
* :mod:`ferrograd.testing.strategies` holds the hypothesis strategies
  (``tensors``, ``shapes``, ``broadcastable_shapes``, ``differentiable_points``, ...).

Importing this package never needs ``hypothesis``; only ``check_op`` and the
strategies module do.
"""

from __future__ import annotations

from ..autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ._check_op import check_op
from ._comparison import assert_close
from ._creation import make_tensor

__all__ = [
    "GradcheckError",
    "assert_close",
    "check_op",
    "gradcheck",
    "gradgradcheck",
    "make_tensor",
]
