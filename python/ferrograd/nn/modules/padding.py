"""Padding layers: constant/zero, reflection, replication and circular padding."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
    "ConstantPad3d",
    "ZeroPad3d",
    "ReflectionPad3d",
    "ReplicationPad3d",
    "CircularPad3d",
]


def _pads(padding, n):
    # As PyTorch's _ntuple: a sequence is kept as given (F.pad judges it at forward).
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    return tuple(padding)


class _ConstantPadNd(Module):
    _n = 2

    def __init__(self, padding: IntOrInts, value: float) -> None:
        super().__init__()
        self.padding = _pads(padding, self._n)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dimension of the input with ``value`` (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right)``.
        value (float): the fill value.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ConstantPad1d(1, 3.5)
        >>> pad(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[3.5000, 1.0000, 2.0000, 3.0000, 3.5000]])
    """

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dimensions of the input with ``value`` (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right, top, bottom)``.
        value (float): the fill value.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``.
        - Output: the same with ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ConstantPad2d(1, 3.5)
        >>> pad(torch.arange(4.0).reshape(1, 2, 2))
        tensor([[[3.5000, 3.5000, 3.5000, 3.5000],
                 [3.5000, 0.0000, 1.0000, 3.5000],
                 [3.5000, 2.0000, 3.0000, 3.5000],
                 [3.5000, 3.5000, 3.5000, 3.5000]]])
        >>> nn.ConstantPad2d((1, 0, 0, 2), 0.0)(torch.ones(1, 2, 2)).shape
        ferrograd.Size([1, 4, 3])
    """

    _n = 2


class _ZeroPadNd(_ConstantPadNd):
    # Put before a ConstantPad{1,2,3}d: the value fixed at zero, which the repr leaves out.
    def __init__(self, padding: IntOrInts) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pads the last dimension of the input with zeros (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right)``.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ZeroPad1d(1)
        >>> pad(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[0., 1., 2., 3., 0.]])
    """


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pads the last two dimensions of the input with zeros (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right, top, bottom)``.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``.
        - Output: the same with ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ZeroPad2d(1)
        >>> pad(torch.arange(4.0).reshape(1, 2, 2))
        tensor([[[0., 0., 0., 0.],
                 [0., 0., 1., 0.],
                 [0., 2., 3., 0.],
                 [0., 0., 0., 0.]]])
        >>> nn.ZeroPad2d((1, 0, 0, 2))(torch.ones(1, 2, 2)).shape
        ferrograd.Size([1, 4, 3])
    """


class _ModePad(Module):
    _n = 2
    _mode = "reflect"

    def __init__(self, padding: IntOrInts) -> None:
        super().__init__()
        self.padding = _pads(padding, self._n)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_ModePad):
    """Pads the last dimension of the input with its reflection (the edge is not repeated;
    ``mode='reflect'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right)``.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``. Each amount must be smaller than
          the padded size.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReflectionPad1d(1)
        >>> pad(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[2., 1., 2., 3., 2.]])
    """

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_ModePad):
    """Pads the last two dimensions of the input with their reflection (the edge is not
    repeated; ``mode='reflect'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right, top, bottom)``.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``. Each amount must be smaller than
          the padded size.
        - Output: the same with ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReflectionPad2d(1)
        >>> pad(torch.arange(4.0).reshape(1, 2, 2))
        tensor([[[3., 2., 3., 2.],
                 [1., 0., 1., 0.],
                 [3., 2., 3., 2.],
                 [1., 0., 1., 0.]]])
    """

    _n, _mode = 2, "reflect"


class ReplicationPad1d(_ModePad):
    """Pads the last dimension of the input by repeating its edge values (``mode='replicate'``
    of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right)``.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReplicationPad1d(1)
        >>> pad(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[1., 1., 2., 3., 3.]])
    """

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_ModePad):
    """Pads the last two dimensions of the input by repeating their edge values
    (``mode='replicate'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right, top, bottom)``.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``.
        - Output: the same with ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReplicationPad2d(1)
        >>> pad(torch.arange(4.0).reshape(1, 2, 2))
        tensor([[[0., 0., 1., 1.],
                 [0., 0., 1., 1.],
                 [2., 2., 3., 3.],
                 [2., 2., 3., 3.]]])
    """

    _n, _mode = 2, "replicate"


class CircularPad1d(_ModePad):
    """Pads the last dimension of the input by wrapping around (the other end's values)
    (``mode='circular'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right)``.

    Shape:
        - Input: ``(C, W_in)`` or ``(N, C, W_in)``. Each amount must be at most the
          padded size.
        - Output: the same with ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.CircularPad1d(1)
        >>> pad(torch.tensor([[1.0, 2.0, 3.0]]))
        tensor([[3., 1., 2., 3., 1.]])
    """

    _n, _mode = 1, "circular"


class CircularPad2d(_ModePad):
    """Pads the last two dimensions of the input by wrapping around (the other end's values)
    (``mode='circular'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or ``(left, right, top, bottom)``.

    Shape:
        - Input: ``(C, H_in, W_in)`` or ``(N, C, H_in, W_in)``. Each amount must be at most the
          padded size.
        - Output: the same with ``H_out = H_in + top + bottom`` and ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.CircularPad2d(1)
        >>> pad(torch.arange(4.0).reshape(1, 2, 2))
        tensor([[[3., 2., 3., 2.],
                 [1., 0., 1., 0.],
                 [3., 2., 3., 2.],
                 [1., 0., 1., 0.]]])
    """

    _n, _mode = 2, "circular"


class ConstantPad3d(_ConstantPadNd):
    """Pads the last three dimensions of the input with ``value`` (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or
            ``(left, right, top, bottom, front, back)``.
        value (float): the fill value.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Output: the same with ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ConstantPad3d(1, 3.5)
        >>> pad(torch.ones(1, 1, 2, 2, 2)).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """

    _n = 3


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pads the last three dimensions of the input with zeros (``mode='constant'`` of
    :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or
            ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Output: the same with ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ZeroPad3d(1)
        >>> pad(torch.ones(1, 1, 2, 2, 2)).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """


class ReflectionPad3d(_ModePad):
    """Pads the last three dimensions of the input with their reflection (the edge is not
    repeated; ``mode='reflect'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or
            ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``. Each amount
          must be smaller than the padded size.
        - Output: the same with ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReflectionPad3d(1)
        >>> pad(torch.ones(1, 1, 2, 2, 2)).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """

    _n, _mode = 3, "reflect"


class ReplicationPad3d(_ModePad):
    """Pads the last three dimensions of the input by repeating their edge values
    (``mode='replicate'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or
            ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Output: the same with ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.ReplicationPad3d(1)
        >>> pad(torch.ones(1, 1, 2, 2, 2)).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """

    _n, _mode = 3, "replicate"


class CircularPad3d(_ModePad):
    """Pads the last three dimensions of the input by wrapping around (the other end's values)
    (``mode='circular'`` of :func:`~ferrograd.nn.functional.pad`).

    Args:
        padding (int or tuple): the same amount on every side, or
            ``(left, right, top, bottom, front, back)``.

    Shape:
        - Input: ``(C, D_in, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``. Each amount
          must be at most the padded size.
        - Output: the same with ``D_out = D_in + front + back``, ``H_out = H_in + top + bottom`` and
          ``W_out = W_in + left + right``.

    Example::

        >>> pad = nn.CircularPad3d(1)
        >>> pad(torch.ones(1, 1, 2, 2, 2)).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """

    _n, _mode = 3, "circular"
