"""``softmax``, ``log_softmax`` and ``softmin`` along a dimension, and PyTorch's
deprecated implicit choice of that dimension."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ... import _C

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType

__all__ = [
    "softmax",
    "log_softmax",
    "softmin",
]


def _softmax_dim(ndim):
    # PyTorch's legacy implicit choice when dim is omitted.
    return 0 if ndim in (0, 1, 3) else 1


def _implicit_dim(name, ndim, stacklevel):
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return _softmax_dim(ndim)


def softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Softmax along ``dim``: ``exp(x_i) / sum_j exp(x_j)``, so each slice along ``dim`` is
    positive and sums to 1.

    The largest value of each slice is subtracted first, so large inputs do not
    overflow.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over. When omitted, PyTorch's legacy
            choice is made (0 for 0-, 1- and 3-d inputs, 1 otherwise); pass it
            explicitly.
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softmax(torch.tensor([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]), dim=1)
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]])
    """
    if dim is None:
        dim = _implicit_dim("softmax", input.dim(), _stacklevel)
    return _C.softmax(input, dim, dtype=dtype)


def log_softmax(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Logarithm of :func:`softmax` along ``dim``: ``x_i - log(sum_j exp(x_j))``.

    Computed in one step (not as ``log(softmax(x))``), so it stays finite where the
    softmax would underflow to 0. Pair it with :func:`nll_loss`, or use
    :func:`cross_entropy`, which does both.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over. When omitted, PyTorch's legacy
            choice is made (0 for 0-, 1- and 3-d inputs, 1 otherwise).
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.log_softmax(torch.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([-2.4076, -1.4076, -0.4076])
    """
    if dim is None:
        dim = _implicit_dim("log_softmax", input.dim(), _stacklevel)
    return _C.log_softmax(input, dim, dtype=dtype)


def softmin(
    input: Tensor,
    dim: int | None = None,
    _stacklevel: int = 3,
    dtype: DType | None = None,
) -> Tensor:
    """Softmin along ``dim``: ``softmax(-input)``, so the smallest values get the largest
    weights.

    Args:
        input (Tensor): the input, of any shape.
        dim (int): the dimension to normalise over (PyTorch's legacy choice when
            omitted, as in :func:`softmax`).
        dtype (ferrograd.dtype, optional): cast ``input`` to this dtype first.
            Default: ``None``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softmin(torch.tensor([1.0, 2.0, 3.0]), dim=0)
        tensor([0.6652, 0.2447, 0.0900])
    """
    if dim is None:
        dim = _implicit_dim("softmin", input.dim(), _stacklevel)
    return _C.softmax(-input, dim, dtype=dtype)
