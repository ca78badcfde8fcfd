"""Dropout modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor

__all__ = [
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
]


class _DropoutNd(Module):
    p: float
    inplace: bool

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Dropout: in training mode zeroes each element with probability ``p`` and scales the
    others by ``1 / (1 - p)``; in ``eval()`` mode it returns its input (see
    :func:`~ferrograd.nn.functional.dropout`).

    Args:
        p (float): the probability of zeroing an element. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> drop = nn.Dropout(p=0.25)
        >>> sorted(set(drop(torch.ones(100)).tolist()))
        [0.0, 1.3333333730697632]
        >>> drop.eval()(torch.ones(3))
        tensor([1., 1., 1.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Channel dropout: in training mode zeroes whole channels of ``(N, C, L)`` or ``(C, L)``
    with probability ``p`` and scales the others by ``1 / (1 - p)``; the identity in
    ``eval()`` mode.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, L)`` or ``(C, L)``.
        - Output: the input's shape.

    Example::

        >>> y = nn.Dropout1d()(torch.ones(2, 8, 5))
        >>> bool((y == y[:, :, :1]).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(_DropoutNd):
    """Channel dropout: in training mode zeroes whole channels of ``(N, C, H, W)`` or
    ``(C, H, W)`` with probability ``p`` and scales the others by ``1 / (1 - p)``; the
    identity in ``eval()`` mode.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, H, W)``; a 3-d input is read as ``(N, C, L)``, with
          PyTorch's warning.
        - Output: the input's shape.

    Example::

        >>> y = nn.Dropout2d()(torch.ones(2, 8, 3, 3))
        >>> bool((y == y[:, :, :1, :1]).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(_DropoutNd):
    """Channel dropout: in training mode zeroes whole channels of ``(N, C, D, H, W)`` or
    ``(C, D, H, W)`` with probability ``p`` and scales the others by ``1 / (1 - p)``; the
    identity in ``eval()`` mode.

    Args:
        p (float): the probability of zeroing a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, D, H, W)`` or ``(C, D, H, W)``.
        - Output: the input's shape.

    Example::

        >>> y = nn.Dropout3d()(torch.ones(2, 8, 2, 2, 2))
        >>> bool((y == y[:, :, :1, :1, :1]).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Alpha dropout, for SELU networks: in training mode each element is dropped with
    probability ``p`` to SELU's negative saturation value, then an affine map keeps the mean
    and variance; the identity in ``eval()`` mode.

    Args:
        p (float): the probability of dropping an element. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(*)``, any shape.
        - Output: ``(*)``, the input's shape.

    Example::

        >>> drop = nn.AlphaDropout(0.2)
        >>> drop(torch.zeros(1000)).unique().numel()
        2
        >>> drop.eval()(torch.zeros(3))
        tensor([0., 0., 0.])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (one draw per sample and channel) in training mode; the
    identity in ``eval()`` mode.

    Args:
        p (float): the probability of dropping a channel. Default: ``0.5``.
        inplace (bool): write the result into the input. Default: ``False``.

    Shape:
        - Input: ``(N, C, *)``.
        - Output: the input's shape.

    Example::

        >>> y = nn.FeatureAlphaDropout()(torch.zeros(2, 3, 4))
        >>> bool((y == y[:, :, :1]).all())
        True
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.feature_alpha_dropout(input, self.p, self.training)
