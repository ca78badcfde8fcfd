"""``LayerNorm`` and ``GroupNorm``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .module import Module, Parameter

__all__ = ["LayerNorm", "GroupNorm"]


class LayerNorm(Module):
    """Layer normalisation: each sample is normalised over its trailing ``normalized_shape``
    dimensions, ``y = (x - mean) / sqrt(var + eps) * weight + bias`` (biased variance), the
    statistics computed per sample in training and evaluation alike (see
    :func:`~ferrograd.nn.functional.layer_norm`).

    Args:
        normalized_shape (int or tuple): the trailing shape to normalise over.
        eps (float): added to the variance. Default: ``1e-5``.
        elementwise_affine (bool): learn ``weight`` (initially 1) and ``bias``
            (initially 0) of ``normalized_shape``. Default: ``True``.
        bias (bool): learn the ``bias`` too (with ``elementwise_affine``).
            Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Attributes:
        weight (Parameter or None): of ``normalized_shape``.
        bias (Parameter or None): of ``normalized_shape``.

    Shape:
        - Input: ``(N, *, normalized_shape)``.
        - Output: the input's shape.

    Example::

        >>> ln = nn.LayerNorm(3)
        >>> ln(torch.tensor([[1.0, 2.0, 3.0], [2.0, 2.0, 2.0]]))
        tensor([[-1.2247,  0.0000,  1.2247],
                [ 0.0000,  0.0000,  0.0000]], grad_fn=<NativeLayerNormBackward0>)
        >>> nn.LayerNorm([4, 5])(torch.ones(2, 3, 4, 5)).shape
        ferrograd.Size([2, 3, 4, 5])
    """

    normalized_shape: tuple[int, ...]
    eps: float
    elementwise_affine: bool
    weight: Tensor | None
    bias: Tensor | None

    def __init__(
        self,
        normalized_shape: IntOrInts,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype or _C.get_default_dtype()
        if elementwise_affine:
            self.weight = Parameter(_C.ones(*self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(*self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        with no_grad():
            if self.weight is not None:
                self.weight.fill_(1.0)
            if self.bias is not None:
                self.bias.zero_()

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


class GroupNorm(Module):
    """Group normalisation: the channels of each sample are split into ``num_groups`` groups,
    each normalised over its channels and spatial positions, then a per-channel affine map
    is applied (see :func:`~ferrograd.nn.functional.group_norm`).

    Args:
        num_groups (int): the number of groups; divides ``num_channels``.
        num_channels (int): ``C``, the number of channels.
        eps (float): added to the variance. Default: ``1e-5``.
        affine (bool): learn per-channel ``weight`` (initially 1) and ``bias``
            (initially 0). Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.
        bias (bool, keyword-only): learn the ``bias`` too (with ``affine``); ``False``
            leaves ``bias`` as ``None``, a scale without a shift. Default: ``True``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Example::

        >>> gn = nn.GroupNorm(2, 4)
        >>> gn(torch.tensor([[1.0, 3.0, 10.0, 30.0]]))
        tensor([[-1.0000,  1.0000, -1.0000,  1.0000]],
               grad_fn=<NativeGroupNormBackward0>)
    """

    num_groups: int
    num_channels: int
    eps: float
    affine: bool
    weight: Tensor | None
    bias: Tensor | None

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: object = None,
        dtype: DType | None = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(
                f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        dtype = dtype or _C.get_default_dtype()
        if affine:
            self.weight = Parameter(_C.ones(num_channels, dtype=dtype))
            if bias:
                self.bias = Parameter(_C.zeros(num_channels, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def reset_parameters(self):
        """Weight 1, bias 0."""
        if self.affine:
            with no_grad():
                self.weight.fill_(1.0)
                if self.bias is not None:
                    self.bias.zero_()

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
            f"bias={self.bias is not None}"
        )


# ----- RMSNorm, LocalResponseNorm, CrossMapLRN2d -----------------------------------------------

from .._functional import norm as _f_norm  # noqa: E402

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import DType, IntOrInts

__all__ += ["RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class RMSNorm(Module):
    """Root-mean-square normalisation: ``y = x / sqrt(mean(x ** 2) + eps) * weight`` over the
    trailing ``normalized_shape`` dimensions (see
    :func:`~ferrograd.nn.functional.rms_norm`).

    Args:
        normalized_shape (int or tuple): the trailing shape to normalise over.
        eps (float, optional): added to the mean square; ``None`` uses
            ``torch.finfo(input.dtype).eps``. Default: ``None``.
        elementwise_affine (bool): learn ``weight`` (initially 1). Default: ``True``.
        device (optional): accepted for PyTorch compatibility; ferrograd tensors live on
            the CPU. Default: ``None``.
        dtype (ferrograd.dtype, optional): the parameters' dtype. Default: the default dtype.

    Shape:
        - Input: ``(N, *, normalized_shape)``.
        - Output: the input's shape.

    Example::

        >>> nn.RMSNorm(2)(torch.tensor([[3.0, 4.0]]))
        tensor([[0.8485, 1.1314]], grad_fn=<MulBackward0>)
    """

    normalized_shape: tuple[int, ...]
    eps: float | None
    elementwise_affine: bool
    weight: Tensor | None

    def __init__(
        self,
        normalized_shape: IntOrInts,
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: object = None,
        dtype: DType | None = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(
                _C.ones(*self.normalized_shape, dtype=dtype or _C.get_default_dtype())
            )
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self):
        """Weight 1."""
        if self.weight is not None:
            with no_grad():
                self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}"
        )


class LocalResponseNorm(Module):
    """Local response normalisation across channels: each element is divided by
    ``(k + alpha * mean of x ** 2 over size neighbouring channels) ** beta`` (see
    :func:`~ferrograd.nn.functional.local_response_norm`).

    Args:
        size (int): the number of neighbouring channels in each window.
        alpha (float): the multiplier. Default: ``1e-4``.
        beta (float): the exponent. Default: ``0.75``.
        k (float): the additive constant. Default: ``1.0``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Example::

        >>> lrn = nn.LocalResponseNorm(2)
        >>> lrn(torch.ones(2, 4, 5, 5)).shape
        ferrograd.Size([2, 4, 5, 5])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """The legacy (Lua Torch) cross-channel local response normalisation on ``(N, C, H, W)``:
    ``x * (k + alpha / size * windowed sum of x ** 2) ** -beta``, with that implementation's
    channel window (channel 0 stays in every window's sum, as in PyTorch).

    Its gradient is the derivative of this forward, by autograd.

    Args:
        size (int): the number of channels in each window.
        alpha (float): the multiplier. Default: ``1e-4``.
        beta (float): the exponent. Default: ``0.75``.
        k (float): the additive constant. Default: ``1``.

    Shape:
        - Input: ``(N, C, H, W)``.
        - Output: the input's shape.

    Example::

        >>> nn.CrossMapLRN2d(3, alpha=1.0, beta=1.0)(torch.ones(1, 3, 1, 1)).flatten()
        tensor([0.6000, 0.5000, 0.5000])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return _f_norm.cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
