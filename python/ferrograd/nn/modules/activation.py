"""Activation modules, each a thin wrapper over its ``nn.functional`` form."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


# The bases below hold the constructor and ``extra_repr`` that several activations share;
# each activation keeps its own docstring and ``forward``.


class _NoArguments(Module):
    def __init__(self) -> None:
        # No arguments, as in PyTorch; help() shows the empty signature.
        super().__init__()


class _Inplace(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _AlphaInplace(Module):
    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class _Dim(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Shrink(Module):
    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def extra_repr(self) -> str:
        return str(self.lambd)


class ReLU(_Inplace):
    """Rectified linear unit, elementwise: ``max(0, x)``.

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.ReLU()(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([0., 0., 2.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)


class LeakyReLU(Module):
    """Leaky ReLU, elementwise: ``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere.

    Args:
        negative_slope (float): the slope for negative inputs. Default: ``0.01``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.LeakyReLU(0.1)(torch.tensor([-2.0, 0.5]))
        tensor([-0.2000,  0.5000])
    """

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"negative_slope={self.negative_slope}{inplace_str}"


class ELU(_AlphaInplace):
    """Exponential linear unit, elementwise: ``x`` where ``x > 0``, ``alpha * (exp(x) - 1)``
    elsewhere.

    Args:
        alpha (float): the negative saturation value is ``-alpha``. Default: ``1.0``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.ELU()(torch.tensor([-1.0, 0.0, 2.0]))
        tensor([-0.6321,  0.0000,  2.0000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)


class GELU(Module):
    """Gaussian error linear unit, elementwise: ``x * Phi(x)``, ``Phi`` the standard normal
    cumulative distribution function.

    Args:
        approximate (str): ``'none'`` (exact, with ``erf``) or ``'tanh'`` (the tanh
            approximation). Default: ``'none'``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.GELU()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(_Inplace):
    """Sigmoid linear unit (swish), elementwise: ``x * sigmoid(x)``.

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.SiLU()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.silu(input, self.inplace)


class Softplus(Module):
    """Softplus, elementwise: ``log(1 + exp(beta * x)) / beta``; linear where
    ``beta * x > threshold``.

    Args:
        beta (float): the sharpness. Default: ``1.0``.
        threshold (float): above this value of ``beta * x`` the output is ``x``.
            Default: ``20.0``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Softplus(beta=2.0)(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([0.0635, 0.3466, 1.0635])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Sigmoid(_NoArguments):
    """Logistic sigmoid, elementwise: ``1 / (1 + exp(-x))``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Sigmoid()(torch.tensor([-2.0, 0.0, 2.0]))
        tensor([0.1192, 0.5000, 0.8808])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Tanh(_NoArguments):
    """Hyperbolic tangent, elementwise.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Tanh()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7616,  0.0000,  0.7616])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Softmax(_Dim):
    """Softmax along ``dim``: each slice along ``dim`` becomes positive and sums to 1 (see
    :func:`~ferrograd.nn.functional.softmax`).

    Args:
        dim (int, optional): the dimension to normalise over. ``None`` makes PyTorch's
            legacy choice from the input's number of dimensions (0 for 0-, 1- and
            3-d, 1 otherwise); give it explicitly. Default: ``None``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> m = nn.Softmax(dim=1)
        >>> m(torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
        tensor([[0.0900, 0.2447, 0.6652],
                [0.3333, 0.3333, 0.3333]])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim, _stacklevel=5)


class LogSoftmax(_Dim):
    """Log of the softmax along ``dim``, computed in one stable step (see
    :func:`~ferrograd.nn.functional.log_softmax`); pairs with :class:`NLLLoss`.

    Args:
        dim (int, optional): the dimension to normalise over (PyTorch's legacy choice
            when ``None``). Default: ``None``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.LogSoftmax(dim=0)(torch.tensor([1.0, 2.0, 3.0]))
        tensor([-2.4076, -1.4076, -0.4076])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim, _stacklevel=5)


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


class Softmax2d(_NoArguments):
    """Softmax over the channels at each spatial position: ``Softmax(dim=-3)`` on
    ``(N, C, H, W)`` or ``(C, H, W)``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> y = nn.Softmax2d()(torch.zeros(1, 4, 2, 2))
        >>> y[0, :, 0, 0]
        tensor([0.2500, 0.2500, 0.2500, 0.2500])
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead"
            )
        return F.softmax(input, -3)


class Softmin(_Dim):
    """Softmin along ``dim``: ``softmax(-x)``, the smallest values getting the largest weights.

    Args:
        dim (int, optional): the dimension to normalise over. Default: ``None``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Softmin(dim=0)(torch.tensor([1.0, 2.0, 3.0]))
        tensor([0.6652, 0.2447, 0.0900])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softmin(input, self.dim, _stacklevel=5)


class PReLU(Module):
    """Parametric ReLU: ``x`` where ``x > 0``, ``a * x`` elsewhere, with a learned slope ``a``.

    Args:
        num_parameters (int): 1 (one slope shared by all channels) or the number of
            channels (one slope per channel, dimension 1 of the input). Default: ``1``.
        init (float): the initial slope. Default: ``0.25``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors are
            on the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the slope's dtype. Default: the default
            dtype.

    Attributes:
        weight (Parameter): ``(num_parameters,)``, the slopes.

    Shape:
        - Input: ``(*)``; with ``num_parameters > 1``, ``(N, C, *)`` or ``(C,)`` with
          ``C = num_parameters``.
        - Output: the input's shape.

    Example::

        >>> m = nn.PReLU()
        >>> m(torch.tensor([-2.0, 1.0])).tolist()
        [-0.5, 1.0]
        >>> nn.PReLU(num_parameters=3).weight.shape
        ferrograd.Size([3])
    """

    num_parameters: int
    weight: Tensor

    def __init__(
        self,
        num_parameters: int = 1,
        init: float = 0.25,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(_C.full((num_parameters,), init, dtype=dtype or _C.get_default_dtype()))

    def reset_parameters(self):
        """Every slope back to ``init``."""
        with _no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Mish(_Inplace):
    """Mish, elementwise: ``x * tanh(softplus(x))``.

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Mish()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.mish(input, self.inplace)


class Hardswish(_Inplace):
    """Hard swish, elementwise: ``x * relu6(x + 3) / 6``.

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Hardswish()(torch.tensor([-4.0, 0.0, 1.0, 4.0]))
        tensor([-0.0000, 0.0000, 0.6667, 4.0000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardswish(input, self.inplace)


class Hardsigmoid(_Inplace):
    """Hard sigmoid, elementwise: ``relu6(x + 3) / 6``.

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Hardsigmoid()(torch.tensor([-4.0, 0.0, 1.5, 4.0]))
        tensor([0.0000, 0.5000, 0.7500, 1.0000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardsigmoid(input, self.inplace)


class SELU(_Inplace):
    """Scaled exponential linear unit, elementwise: ``scale * elu(x, alpha)`` with the
    self-normalising constants (``alpha`` about 1.6733, ``scale`` about 1.0507).

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.SELU()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-1.1113,  0.0000,  1.0507])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.selu(input, self.inplace)


class LogSigmoid(_NoArguments):
    """Log of the sigmoid, elementwise: ``-softplus(-x)``, finite for large negative inputs.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.LogSigmoid()(torch.tensor([-100.0, 0.0, 2.0]))
        tensor([-100.0000,   -0.6931,   -0.1269])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.logsigmoid(input)


class CELU(_AlphaInplace):
    """Continuously differentiable ELU, elementwise:
    ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Args:
        alpha (float): the scale of the negative part. Default: ``1.0``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.CELU(alpha=2.0)(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.7869,  0.0000,  1.0000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class Softsign(_NoArguments):
    """Softsign, elementwise: ``x / (1 + |x|)``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Softsign()(torch.tensor([-3.0, 0.0, 1.0]))
        tensor([-0.7500,  0.0000,  0.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softsign(input)


class Tanhshrink(_NoArguments):
    """Tanhshrink, elementwise: ``x - tanh(x)``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Tanhshrink()(torch.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2384,  0.0000,  0.2384])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.tanhshrink(input)


class GLU(Module):
    """Gated linear unit: the input's two halves ``a, b`` along ``dim`` give
    ``a * sigmoid(b)``.

    Args:
        dim (int): the dimension to split; its size must be even. Default: ``-1``.

    Shape:
        - Input: ``(*1, 2 * M, *2)``, the even size at ``dim``.
        - Output: ``(*1, M, *2)``.

    Example::

        >>> nn.GLU()(torch.ones(3, 8)).shape
        ferrograd.Size([3, 4])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Hardshrink(_Shrink):
    """Hard shrinkage, elementwise: ``x`` where ``|x| > lambd``, 0 elsewhere.

    Args:
        lambd (float): the threshold. Default: ``0.5``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Hardshrink()(torch.tensor([-1.0, -0.2, 0.3, 2.0]))
        tensor([-1.,  0.,  0.,  2.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)


class Softshrink(_Shrink):
    """Soft shrinkage, elementwise: ``x - lambd`` above ``lambd``, ``x + lambd`` below
    ``-lambd``, 0 in between.

    Args:
        lambd (float): the threshold, at least 0. Default: ``0.5``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Softshrink(1.0)(torch.tensor([-3.0, 0.5, 2.0]))
        tensor([-2.,  0.,  1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)


class Threshold(Module):
    """Thresholding, elementwise: ``x`` where ``x > threshold``, ``value`` elsewhere.

    Args:
        threshold (float): the value to compare with.
        value (float): the value replacing elements at or below ``threshold``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.Threshold(0.5, -9.0)(torch.tensor([-1.0, 0.5, 2.0]))
        tensor([-9., -9.,  2.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        s = f"threshold={self.threshold}, value={self.value}"
        return s + (", inplace=True" if self.inplace else "")


# ----- Hardtanh and RReLU ----------------------------------------------------------------------

import warnings as _warnings  # noqa: E402

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType

__all__ += ["Hardtanh", "RReLU"]


class Hardtanh(Module):
    """``x`` clamped to ``[min_val, max_val]``, elementwise.

    Args:
        min_val (float): the lower bound. Default: ``-1.0``.
        max_val (float): the upper bound, greater than ``min_val``. Default: ``1.0``.
        inplace (bool): write the result into the input. Default: ``False``.
        min_value (float, optional): deprecated name of ``min_val`` (overrides it,
            with PyTorch's ``FutureWarning``). Default: ``None``.
        max_value (float, optional): deprecated name of ``max_val``. Default: ``None``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Raises:
        ValueError: if ``max_val <= min_val`` (also an ``AssertionError``, which is
            what PyTorch raises).

    Example::

        >>> nn.Hardtanh(-2.0, 2.0)(torch.tensor([-3.0, 0.5, 3.0]))
        tensor([-2.0000,  0.5000,  2.0000])
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
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

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"min_val={self.min_val}, max_val={self.max_val}{inplace_str}"


class ReLU6(Hardtanh):
    """ReLU capped at 6, elementwise: ``min(max(0, x), 6)`` (a :class:`Hardtanh` from 0 to 6).

    Args:
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> nn.ReLU6()(torch.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class _AssertionValueError(ValueError, AssertionError):
    """PyTorch asserts ``max_val > min_val``; this is also a ValueError so the
    check survives ``python -O`` and reads as an ordinary argument error."""


class RReLU(Module):
    """Randomized leaky ReLU: ``x`` where ``x >= 0``, ``a * x`` elsewhere.

    In training mode ``a`` is drawn uniformly from ``[lower, upper]`` for each
    non-positive element; in ``eval()`` mode ``a = (lower + upper) / 2``.

    Args:
        lower (float): the lower bound of the slope. Default: ``1/8``.
        upper (float): the upper bound of the slope. Default: ``1/3``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> m = nn.RReLU(0.1, 0.3).eval()
        >>> m(torch.tensor([-1.0, 2.0]))
        tensor([-0.2000,  2.0000])
    """

    def __init__(
        self,
        lower: float = 1.0 / 8,
        upper: float = 1.0 / 3,
        inplace: bool = False,
    ) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        inplace_str = ", inplace=True" if self.inplace else ""
        return f"lower={self.lower}, upper={self.upper}{inplace_str}"
