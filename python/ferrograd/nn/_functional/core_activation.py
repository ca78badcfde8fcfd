"""The core activations (``relu``, ``elu``, ``gelu``, ``silu``, ``softplus``, ``sigmoid``,
``tanh``, ``hardtanh`` and their in-place forms), each one Rust op; the others are
composed in ``activation.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._inplace import apply_inplace as _apply_inplace

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "relu",
    "relu6",
    "leaky_relu",
    "leaky_relu_",
    "elu",
    "elu_",
    "gelu",
    "silu",
    "softplus",
    "sigmoid",
    "tanh",
    "hardtanh",
]


def _native_inplace(name, input, *args):
    # The core's in-place op; a value batched by vmap takes the out-of-place
    # op's batching rule and is written in.
    if isinstance(input, _C.Tensor):
        return getattr(_C, name)(input, *args)
    return _apply_inplace(input, lambda: getattr(_C, name[:-1])(input, *args), name)


def _activation(input, inplace, compute):
    # In place, the result is written into the input as `Tensor.relu_` would
    # be, so a backward needing the input (silu) keeps its old value; each
    # `compute` is one elementwise op of the input alone (`direct`).
    return _apply_inplace(input, compute, direct=True) if inplace else compute()


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Rectified linear unit, elementwise: ``max(0, x)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.relu(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """
    return _activation(input, inplace, lambda: _C.relu(input))


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """ReLU capped at 6, elementwise: ``min(max(0, x), 6)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.relu6(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    return _activation(input, inplace, lambda: _C.hardtanh(input, 0.0, 6.0))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Leaky ReLU, elementwise: ``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        negative_slope (float): the slope for negative inputs. Default: ``0.01``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.leaky_relu(torch.tensor([-2.0, 0.5]), negative_slope=0.1)
        tensor([-0.2000,  0.5000])
    """
    if inplace:
        return _native_inplace("leaky_relu_", input, negative_slope)
    return _C.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`: writes ``leaky_relu(input)`` into ``input``.

    Args:
        input (Tensor): the tensor to overwrite.
        negative_slope (float): the slope for negative inputs. Default: ``0.01``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-2.0, 0.5])
        >>> F.leaky_relu_(x, 0.1) is x, x
        (True, tensor([-0.2000,  0.5000]))
    """
    return _native_inplace("leaky_relu_", input, negative_slope)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Exponential linear unit, elementwise: ``x`` where ``x > 0``, ``alpha * (exp(x) - 1)``
    elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        alpha (float): the value the output approaches for large negative inputs is
            ``-alpha``. Default: ``1.0``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.elu(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.6321,  0.0000,  2.0000])
    """
    return _native_inplace("elu_", input, alpha) if inplace else _C.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`: writes ``elu(input, alpha)`` into ``input``.

    Args:
        input (Tensor): the tensor to overwrite.
        alpha (float): the ``alpha`` of :func:`elu`. Default: ``1.0``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 2.0])
        >>> F.elu_(x) is x, x
        (True, tensor([-0.6321,  2.0000]))
    """
    return _native_inplace("elu_", input, alpha)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Gaussian error linear unit, elementwise: ``x * Phi(x)``, ``Phi`` the standard normal
    cumulative distribution function.

    Args:
        input (Tensor): the input, of any shape.
        approximate (str): ``'none'`` for the exact form with ``erf``, or ``'tanh'`` for
            ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``.
            Default: ``'none'``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 0.0, 1.0])
        >>> F.gelu(x)
        tensor([-0.1587,  0.0000,  0.8413])
        >>> F.gelu(x, approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412])
    """
    return _C.gelu(input, approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Sigmoid linear unit (swish), elementwise: ``x * sigmoid(x)``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.silu(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """
    return _activation(input, inplace, lambda: _C.silu(input))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Softplus, elementwise: ``log(1 + exp(beta * x)) / beta``, a smooth ReLU.

    Where ``beta * x > threshold`` the result is ``x`` itself, which keeps large inputs
    from overflowing.

    Args:
        input (Tensor): the input, of any shape.
        beta (float): the sharpness. Default: ``1.0``.
        threshold (float): above this value of ``beta * x`` the function is linear.
            Default: ``20.0``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softplus(torch.tensor([-1.0, 0.0, 30.0]))
        tensor([ 0.3133,  0.6931, 30.0000])
    """
    return _C.softplus(input, beta, threshold)


def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid, elementwise: ``1 / (1 + exp(-x))``.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``, with values in ``(0, 1)``.

    Example::

        >>> F.sigmoid(torch.tensor([-2.0, 0.0, 2.0]))
        tensor([0.1192, 0.5000, 0.8808])
    """
    return _C.sigmoid(input)


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent, elementwise.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``, with values in ``(-1, 1)``.

    Example::

        >>> F.tanh(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7616,  0.0000,  0.7616])
    """
    return _C.tanh(input)


def hardtanh(
    input: Tensor,
    min_val: float = -1.0,
    max_val: float = 1.0,
    inplace: bool = False,
) -> Tensor:
    """``input`` clamped to ``[min_val, max_val]``, elementwise.

    Args:
        input (Tensor): the input, of any shape.
        min_val (float): the lower bound. Default: ``-1.0``.
        max_val (float): the upper bound. Default: ``1.0``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Raises:
        ValueError: if ``min_val > max_val``.

    Example::

        >>> F.hardtanh(torch.tensor([-3.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _activation(input, inplace, lambda: _C.hardtanh(input, min_val, max_val))
