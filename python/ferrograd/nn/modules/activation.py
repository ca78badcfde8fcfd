"""Activation modules, each a thin wrapper over its ``nn.functional`` form."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = [
    "ReLU",
    "LeakyReLU",
    "ELU",
    "GELU",
    "SiLU",
    "Softplus",
    "Sigmoid",
    "Tanh",
    "Softmax",
    "LogSoftmax",
]


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class ELU(Module):
    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"alpha={self.alpha}{inplace_str}"


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


# ----- more activations: Softmax2d, PReLU, Mish, Hardswish, ... ------------------------------

from ... import _C  # noqa: E402
from ...autograd.grad_mode import no_grad as _no_grad  # noqa: E402
from .module import Parameter  # noqa: E402

__all__ += [
    "Softmax2d",
    "Softmin",
    "PReLU",
    "Mish",
    "Hardswish",
    "Hardsigmoid",
    "LogSigmoid",
    "ReLU6",
    "SELU",
    "CELU",
    "Softsign",
    "Tanhshrink",
    "GLU",
    "Hardshrink",
    "Softshrink",
    "Threshold",
]


class Softmax2d(Module):
    """Softmax over the channels of a ``(N, C, H, W)`` or ``(C, H, W)`` input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead"
            )
        return F.softmax(input, -3)


class Softmin(Module):
    """``softmax(-x)`` along ``dim``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """Leaky ReLU with a learned slope (``weight``): one shared or one per channel."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_C.full((num_parameters,), init, dtype=dtype or _C.get_default_dtype()))

    def reset_parameters(self):
        """Every slope back to ``init``."""
        with _no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class _Inplace(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(_Inplace):
    """``x * tanh(softplus(x))``."""

    def forward(self, input):
        return F.mish(input, self.inplace)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``."""

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``."""

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class SELU(_Inplace):
    """Scaled ELU with the self-normalising constants."""

    def forward(self, input):
        return F.selu(input, self.inplace)


class LogSigmoid(Module):
    """``log(sigmoid(x))``."""

    def forward(self, input):
        return F.logsigmoid(input)


class CELU(Module):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    """``x / (1 + |x|)``."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """``x - tanh(x)``."""

    def forward(self, input):
        return F.tanhshrink(input)


class GLU(Module):
    """Gated linear unit: first half of ``dim`` times the sigmoid of the second."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Module):
    """Shrinks ``x`` towards 0 by ``lambd``, 0 inside ``[-lambd, lambd]``."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        s = f"threshold={self.threshold}, value={self.value}"
        return s + (", inplace=True" if self.inplace else "")


# ----- Hardtanh and RReLU ----------------------------------------------------------------------

import warnings as _warnings  # noqa: E402

__all__ += ["Hardtanh", "RReLU"]


class Hardtanh(Module):
    """``input`` clamped to ``[min_val, max_val]`` (the deprecated ``min_value``/
    ``max_value`` keywords still override them, with PyTorch's warning)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        if min_value is not None:
            _warnings.warn(
                "keyword argument `min_value` is deprecated and rename to `min_val`",
                FutureWarning,
                stacklevel=2,
            )
            min_val = min_value
        if max_value is not None:
            _warnings.warn(
                "keyword argument `max_value` is deprecated and rename to `max_val`",
                FutureWarning,
                stacklevel=2,
            )
            max_val = max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace
        if not self.max_val > self.min_val:
            raise _AssertionValueError(
                f"max_val ({self.max_val}) must be greater than min_val ({self.min_val})"
            )

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    """``min(max(0, x), 6)``: a ``Hardtanh`` from 0 to 6, as in PyTorch."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input):
        return F.relu6(input, self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class _AssertionValueError(ValueError, AssertionError):
    """PyTorch asserts ``max_val > min_val``; this is also a ValueError so the
    check survives ``python -O`` and reads as an ordinary argument error."""


class RReLU(Module):
    """Randomized leaky ReLU: a slope drawn from ``[lower, upper]`` per
    non-positive element while training, ``(lower + upper) / 2`` in ``eval()``."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"
