"""Activations PyTorch has beyond the core set, composed from differentiable
ops (so their gradients of every order come from those ops)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._inplace import apply_inplace
from ..._replay import replayed
from ._args import tensor_args

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "prelu",
    "mish",
    "hardswish",
    "hardsigmoid",
    "logsigmoid",
    "selu",
    "celu",
    "softsign",
    "tanhshrink",
    "glu",
    "hardshrink",
    "softshrink",
    "threshold",
    "threshold_",
    "relu_",
    "hardtanh_",
    "selu_",
    "celu_",
    "rrelu",
    "rrelu_",
    "gumbel_softmax",
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _act(input, inplace, compute, direct=True):
    # In place, the value is written into the input; each `compute` here is
    # one elementwise op of the input alone (`direct`), so with nothing to
    # record it maps the input's memory.
    return apply_inplace(input, compute, direct=direct) if inplace else compute()


@tensor_args("input", "weight")
@_autocast_op("prelu")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Parametric ReLU, elementwise: ``x`` where ``x > 0``, ``weight * x`` elsewhere.

    Args:
        input (Tensor): ``(N, C, *)``, ``(C,)`` or any shape when ``weight`` has one
            element.
        weight (Tensor): the slopes: one element shared by all channels, or ``C``
            elements, one per channel (dimension 1 of ``input``).

    Returns:
        Tensor: the same shape as ``input``.

    Raises:
        RuntimeError: if ``weight`` has neither 1 nor ``C`` elements.

    Example::

        >>> x = torch.tensor([[-1.0, 2.0], [-3.0, -4.0]])
        >>> F.prelu(x, torch.tensor([0.1, 0.5]))
        tensor([[-0.1000,  2.0000],
                [-0.3000, -2.0000]])
    """
    n = weight.numel()
    if n != 1:
        channels = input.size(1) if input.dim() >= 2 else 1
        if n != channels:
            raise RuntimeError(
                "Mismatch of parameter numbers and input channel size. Found parameter "
                f"numbers = {n} and channel size = {channels}."
            )
        w = weight.reshape(n, *([1] * (input.dim() - 2)))
    else:
        w = weight.reshape(())
    return _C.where(input > 0, input, w * input)


@tensor_args("input")
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """Mish, elementwise: ``x * tanh(softplus(x))``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.mish(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """
    return _act(input, inplace, lambda: _C.mish(input))


@tensor_args("input")
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """Hard swish, elementwise: ``x * relu6(x + 3) / 6``.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.hardswish(torch.tensor([-4.0, 0.0, 1.0, 4.0]))
        tensor([-0.0000, 0.0000, 0.6667, 4.0000])
    """
    return _act(input, inplace, lambda: _C.hardswish(input))


@tensor_args("input")
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """Hard sigmoid, elementwise: ``relu6(x + 3) / 6``, a piecewise-linear sigmoid.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.hardsigmoid(torch.tensor([-4.0, 0.0, 1.5, 4.0]))
        tensor([0.0000, 0.5000, 0.7500, 1.0000])
    """
    return _act(input, inplace, lambda: _C.hardsigmoid(input))


@tensor_args("input")
def logsigmoid(input: Tensor) -> Tensor:
    """Log of the sigmoid, elementwise: ``log(1 / (1 + exp(-x)))``.

    Computed as ``min(x, 0) - log1p(exp(-|x|))``, so it stays finite for large inputs
    of either sign.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.logsigmoid(torch.tensor([-100.0, 0.0, 2.0]))
        tensor([-100.0000,   -0.6931,   -0.1269])
    """
    return _C.logsigmoid(input)


@tensor_args("input")
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled exponential linear unit, elementwise: ``scale * elu(x, alpha)``.

    ``alpha`` and ``scale`` are the self-normalising constants (about 1.6733 and
    1.0507) that keep activations near zero mean and unit variance.

    Args:
        input (Tensor): the input, of any shape.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.selu(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-1.1113,  0.0000,  1.0507])
    """
    return _act(input, inplace, lambda: _C.elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0))


@tensor_args("input")
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Continuously differentiable ELU, elementwise:
    ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        input (Tensor): the input, of any shape.
        alpha (float): the scale of the negative part (not 0). Default: ``1.0``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.celu(torch.tensor([-1.0, 0.0, 1.0]), alpha=2.0)
        tensor([-0.7869,  0.0000,  1.0000])
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _act(input, inplace, lambda: _C.elu(input, alpha, 1.0, 1.0 / alpha))


@tensor_args("input")
def softsign(input: Tensor) -> Tensor:
    """Softsign, elementwise: ``x / (1 + |x|)``.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softsign(torch.tensor([-3.0, 0.0, 1.0]))
        tensor([-0.7500,  0.0000,  0.5000])
    """
    return _C.softsign(input)


@tensor_args("input")
def tanhshrink(input: Tensor) -> Tensor:
    """Tanhshrink, elementwise: ``x - tanh(x)``.

    Args:
        input (Tensor): the input, of any shape.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.tanhshrink(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2384,  0.0000,  0.2384])
    """
    return input - _C.tanh(input)


@tensor_args("input")
def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: splits ``input`` in two halves ``a, b`` along ``dim`` and returns
    ``a * sigmoid(b)``.

    Args:
        input (Tensor): the input; its size along ``dim`` must be even.
        dim (int): the dimension to split. Default: ``-1``.

    Shape:
        - Input: ``(*, 2 * M, *)``, the even size at ``dim``.
        - Output: ``(*, M, *)``.

    Returns:
        Tensor: ``input``'s shape with ``dim`` halved.

    Example::

        >>> F.glu(torch.tensor([[1.0, 2.0, 0.0, 100.0]]))
        tensor([[0.5000, 2.0000]])
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.size(dim)
    if size % 2:
        d = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    a, b = _C.chunk(input, 2, dim)
    return a * _C.sigmoid(b)


@tensor_args("input")
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Hard shrinkage, elementwise: ``x`` where ``|x| > lambd``, 0 elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        lambd (float): the threshold. Default: ``0.5``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.hardshrink(torch.tensor([-1.0, -0.2, 0.3, 2.0]))
        tensor([-1.,  0.,  0.,  2.])
    """
    return _C.hardshrink(input, lambd)


@tensor_args("input")
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """Soft shrinkage, elementwise: ``x - lambd`` above ``lambd``, ``x + lambd`` below
    ``-lambd``, 0 in between.

    Args:
        input (Tensor): the input, of any shape.
        lambd (float): the threshold, at least 0. Default: ``0.5``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.softshrink(torch.tensor([-1.0, -0.2, 0.3, 2.0]))
        tensor([-0.5000, -0.0000,  0.0000,  1.5000])
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.softshrink(input, lambd)


@tensor_args("input")
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """Thresholding, elementwise: ``x`` where ``x > threshold``, ``value`` elsewhere.

    Args:
        input (Tensor): the input, of any shape.
        threshold (float): the value to compare with.
        value (float): the value replacing elements at or below ``threshold``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.threshold(torch.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0)
        tensor([-9., -9.,  2.])
    """
    return _act(input, inplace, lambda: _C.threshold(input, threshold, value))


@tensor_args("input")
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`: ``input`` keeps its elements above ``threshold``, the others
    become ``value``.

    Args:
        input (Tensor): the tensor to overwrite.
        threshold (float): the value to compare with.
        value (float): the value replacing elements at or below ``threshold``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 0.5, 2.0])
        >>> F.threshold_(x, 0.5, 0.0) is x, x
        (True, tensor([0., 0., 2.]))
    """
    return globals()["threshold"](input, threshold, value, inplace=True)


@tensor_args("input")
def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`: writes ``max(0, input)`` into ``input``.

    Args:
        input (Tensor): the tensor to overwrite.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 2.0])
        >>> F.relu_(x) is x, x
        (True, tensor([0., 2.]))
    """
    return apply_inplace(input, lambda: _C.relu(input), "relu_", direct=True)


@tensor_args("input")
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`: ``input`` clamped to ``[min_val, max_val]``.

    Args:
        input (Tensor): the tensor to overwrite.
        min_val (float): the lower bound. Default: ``-1.0``.
        max_val (float): the upper bound. Default: ``1.0``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-3.0, 0.5, 3.0])
        >>> F.hardtanh_(x) is x, x
        (True, tensor([-1.0000,  0.5000,  1.0000]))
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return apply_inplace(input, lambda: _C.hardtanh(input, min_val, max_val), "hardtanh_",
                         direct=True)


@tensor_args("input")
def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`.

    Args:
        input (Tensor): the tensor to overwrite.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 1.0])
        >>> F.selu_(x) is x, x
        (True, tensor([-1.1113,  1.0507]))
    """
    return selu(input, inplace=True)


@tensor_args("input")
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`.

    Args:
        input (Tensor): the tensor to overwrite.
        alpha (float): the scale of the negative part. Default: ``1.0``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 1.0])
        >>> F.celu_(x) is x, x
        (True, tensor([-0.6321,  1.0000]))
    """
    return celu(input, alpha, inplace=True)


@replayed("rrelu")
def _rrelu_noise(input, lower, upper):
    # ATen's CPU kernel walks the input in memory order and draws one double
    # uniform (53 bits) per non-positive element only; drawing exactly that
    # many from a float64 ``uniform_`` consumes the generator the same way.
    if not isinstance(input, _C.Tensor):
        return _batched_rrelu_noise(input, lower, upper)
    neg = input.detach() <= 0
    count = int(neg.sum().item())
    noise = _C.ones(*input.shape, dtype=input.dtype)
    if count:
        draws = _C.empty(count, dtype=_C.float64).uniform_(lower, upper)
        # The native write (no indexing-key parsing of `noise[neg] = ...`).
        _C._index_put_(noise, (neg,), draws.to(input.dtype), False)
    return noise


def _batched_rrelu_noise(input, lower, upper):
    """The slopes under ``vmap``, by its ``randomness`` mode: refused in 'error'
    mode; 'different' draws for the whole batch at once (what the op draws for
    the stacked samples); 'same' draws one slope per logical element, shared
    by every sample."""
    from ...func._batched import check_random, unwrap_at, wrap

    lid = input._level
    if check_random(lid) == "different":
        return wrap(_rrelu_noise(unwrap_at(input, lid), lower, upper), lid)
    slopes = _C.empty(*input.shape, dtype=_C.float64).uniform_(lower, upper).to(input.dtype)
    return _C.where(input.detach() <= 0, slopes, 1.0)


@tensor_args("input")
def rrelu(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
    inplace: bool = False,
) -> Tensor:
    """Randomized leaky ReLU, elementwise: ``x`` where ``x >= 0``, ``a * x`` elsewhere.

    While training, ``a`` is drawn uniformly from ``[lower, upper]`` for each
    non-positive element (a float64 draw from the global generator, in memory
    order, as PyTorch's CPU kernel draws it); otherwise ``a = (lower + upper) / 2``.

    Args:
        input (Tensor): the input, of any shape.
        lower (float): the lower bound of the slope. Default: ``1/8``.
        upper (float): the upper bound of the slope. Default: ``1/3``.
        training (bool): draw random slopes. Default: ``False``.
        inplace (bool): write the result into ``input`` and return it. Default: ``False``.

    Returns:
        Tensor: the same shape as ``input``.

    Example::

        >>> F.rrelu(torch.tensor([-1.0, 2.0]), lower=0.1, upper=0.3)
        tensor([-0.2000,  2.0000])
        >>> y = F.rrelu(torch.full((1000,), -1.0), training=True)
        >>> bool(((-1 / 3 <= y) & (y <= -1 / 8)).all())
        True
    """
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        slope = (lower + upper) / 2
        if inplace:
            if isinstance(input, _C.Tensor):
                return _C.leaky_relu_(input, slope)
            return apply_inplace(input, lambda: _C.leaky_relu(input, slope), "rrelu_")
        return _C.leaky_relu(input, slope)
    noise = _rrelu_noise(input, lower, upper)
    return _act(input, inplace, lambda: input * noise, direct=False)


@tensor_args("input")
def rrelu_(
    input: Tensor,
    lower: float = 1.0 / 8,
    upper: float = 1.0 / 3,
    training: bool = False,
) -> Tensor:
    """In-place :func:`rrelu`.

    Args:
        input (Tensor): the tensor to overwrite.
        lower (float): the lower bound of the slope. Default: ``1/8``.
        upper (float): the upper bound of the slope. Default: ``1/3``.
        training (bool): draw random slopes. Default: ``False``.

    Returns:
        Tensor: ``input``.

    Example::

        >>> x = torch.tensor([-1.0, 2.0])
        >>> F.rrelu_(x, 0.1, 0.3) is x, x
        (True, tensor([-0.2000,  2.0000]))
    """
    return rrelu(input, lower, upper, training, inplace=True)


@tensor_args("logits")
def gumbel_softmax(
    logits: Tensor,
    tau: float = 1,
    hard: bool = False,
    eps: float = 1e-10,
    dim: int = -1,
) -> Tensor:
    """A sample from the Gumbel-softmax (concrete) distribution:
    ``softmax((logits + g) / tau)`` with ``g = -log(Exponential(1))`` noise.

    With ``hard=True`` the result is the one-hot of that sample's argmax, whose
    gradient is the soft sample's (straight-through estimator).

    Args:
        logits (Tensor): unnormalised log-probabilities, ``(*, C)``.
        tau (float): the temperature; small values give nearly one-hot samples.
            Default: ``1``.
        hard (bool): return a one-hot sample. Default: ``False``.
        eps (float): deprecated, has no effect (warns when changed).
            Default: ``1e-10``.
        dim (int): the class dimension. Default: ``-1``.

    Returns:
        Tensor: ``logits``' shape, summing to 1 along ``dim``.

    Example::

        >>> y = F.gumbel_softmax(torch.zeros(2, 5), tau=0.5, hard=True)
        >>> y.sum(dim=-1)
        tensor([1., 1.])
        >>> sorted(set(y.flatten().tolist()))
        [0.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    # Drawn into an `empty_like` of the logits, which keeps a vmap batch
    # dimension: the draw follows vmap's randomness mode.
    gumbels = -_C._like(logits, "full", 0.0, None, False).exponential_().log()
    y_soft = _C.softmax((logits + gumbels) / tau, dim)
    if hard:
        index = y_soft.max(dim, keepdim=True)[1]
        y_hard = _C._like(logits, "full", 0.0, None, False).scatter(dim, index, 1.0)
        return y_hard - y_soft.detach() + y_soft
    return y_soft
