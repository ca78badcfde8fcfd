"""Activations PyTorch has beyond the core set, composed from differentiable
ops (so their gradients of every order come from those ops)."""

from __future__ import annotations

from ... import _C
from ._args import tensor_args

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
]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _act(input, inplace, compute):
    # In place, the value is computed out of place and written in, as
    # nn.functional's other inplace activations do.
    return _C._apply_inplace(input, compute) if inplace else compute()


@tensor_args("input", "weight")
def prelu(input, weight):
    """``x`` where positive, ``weight * x`` elsewhere; ``weight`` has one value or
    one per channel (dimension 1)."""
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
def mish(input, inplace=False):
    """``x * tanh(softplus(x))``."""
    return _act(input, inplace, lambda: input * _C.tanh(_C.softplus(input, 1.0, 20.0)))


@tensor_args("input")
def hardswish(input, inplace=False):
    """``x * relu6(x + 3) / 6``."""
    # PyTorch's branches: 0 below -3 (as `x * 0`, keeping the sign of zero), the
    # identity above 3, and a NaN takes the identity branch (its gradient is 1).
    # The middle branch reads x only inside [-3, 3], so no NaN or infinity from
    # an unused branch reaches the gradient.
    def value():
        inside = (input >= -3.0) & (input <= 3.0)
        mid = _C.where(inside, input, _C.zeros((), dtype=input.dtype))
        return _C.where(
            input < -3.0, input * 0.0, _C.where(inside, mid * (mid + 3.0) / 6.0, input)
        )

    return _act(input, inplace, value)


@tensor_args("input")
def hardsigmoid(input, inplace=False):
    """``relu6(x + 3) / 6``."""
    # A clamp by numbers: the gradient is 1/6 strictly inside (-3, 3), 0 at a NaN.
    return _act(input, inplace, lambda: _C.clamp(input + 3.0, 0.0, 6.0) / 6.0)


@tensor_args("input")
def logsigmoid(input):
    """``log(sigmoid(x))``, computed as ``-softplus(-x)`` so it never overflows."""
    return -_C.softplus(-input, 1.0, 20.0)


@tensor_args("input")
def selu(input, inplace=False):
    """``scale * elu(x, alpha)`` with the self-normalising constants."""
    return _act(input, inplace, lambda: _C.elu(input, _SELU_ALPHA) * _SELU_SCALE)


@tensor_args("input")
def celu(input, alpha=1.0, inplace=False):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return _act(input, inplace, lambda: _C.elu(input / alpha, 1.0) * alpha)


@tensor_args("input")
def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1.0)


@tensor_args("input")
def tanhshrink(input):
    """``x - tanh(x)``."""
    return input - _C.tanh(input)


@tensor_args("input")
def glu(input, dim=-1):
    """The first half of ``input`` along ``dim`` gated by the sigmoid of the second."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.size(dim)
    if size % 2:
        d = dim % input.dim()
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size {size}")
    a, b = _C.chunk(input, 2, dim)
    return a * _C.sigmoid(b)


@tensor_args("input")
def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, 0 elsewhere."""
    # Zero inside [-lambd, lambd]; a NaN is outside, so it (and its gradient) passes.
    return _C.where(input.abs() <= lambd, _C.zeros((), dtype=input.dtype), input)


@tensor_args("input")
def softshrink(input, lambd=0.5):
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    # PyTorch's kernel: `x * 0` inside [-lambd, lambd] (so -0.0 stays -0.0), `x -+ lambd`
    # outside; a NaN is outside, so it passes with its gradient (sign(NaN) is 0).
    inside = (input >= -lambd) & (input <= lambd)
    return _C.where(inside, input * 0.0, input - lambd * _C.sign(input))


@tensor_args("input")
def threshold(input, threshold, value, inplace=False):
    """``x`` where ``x > threshold``, ``value`` elsewhere."""
    return _act(
        input,
        inplace,
        # PyTorch's `x <= threshold ? value : x`: a NaN is kept, with its gradient.
        lambda: _C.where(input <= threshold, _C.full((), value, dtype=input.dtype), input),
    )


@tensor_args("input")
def threshold_(input, threshold, value):
    """In-place :func:`threshold`."""
    return globals()["threshold"](input, threshold, value, inplace=True)


@tensor_args("input")
def relu_(input):
    """In-place :func:`relu`."""
    return _C._apply_inplace(input, lambda: _C.relu(input))


@tensor_args("input")
def hardtanh_(input, min_val=-1.0, max_val=1.0):
    """In-place :func:`hardtanh`: ``input`` clamped to ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _C._apply_inplace(input, lambda: _C.hardtanh(input, min_val, max_val))


@tensor_args("input")
def selu_(input):
    """In-place :func:`selu`."""
    return selu(input, inplace=True)


@tensor_args("input")
def celu_(input, alpha=1.0):
    """In-place :func:`celu`."""
    return celu(input, alpha, inplace=True)


def _rrelu_noise(input, lower, upper):
    # ATen's CPU kernel walks the input in memory order and draws one double
    # uniform (53 bits) per non-positive element only; drawing exactly that
    # many from a float64 ``uniform_`` consumes the generator the same way.
    neg = input.detach() <= 0
    count = int(neg.sum().item())
    noise = _C.ones(*input.shape, dtype=input.dtype)
    if count:
        draws = _C.empty(count, dtype=_C.float64).uniform_(lower, upper)
        noise[neg] = draws.to(input.dtype)
    return noise


@tensor_args("input")
def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: while training each non-positive element is
    multiplied by a slope drawn uniformly from ``[lower, upper]``; otherwise
    the slope is ``(lower + upper) / 2``."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        slope = (lower + upper) / 2
        if inplace:
            return _C.leaky_relu_(input, slope)
        return _C.leaky_relu(input, slope)
    noise = _rrelu_noise(input, lower, upper)
    return _act(input, inplace, lambda: input * noise)


@tensor_args("input")
def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place :func:`rrelu`."""
    return rrelu(input, lower, upper, training, inplace=True)
