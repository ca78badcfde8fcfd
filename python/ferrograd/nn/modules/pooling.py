"""Pooling layers: max, average and adaptive pooling in one and two dimensions,
max and average pooling in three."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "MaxPool1d",
    "MaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d",
]


class _MaxPoolNd(Module):
    def __init__(
        self,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        dilation: IntOrInts = 1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            "kernel_size={kernel_size}, stride={stride}, padding={padding}, "
            "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__)
        )

    def _pool(self, pool, input):
        return pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling: the maximum of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.max_pool1d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the flat position of each maximum (for
            :class:`MaxUnpool1d`). Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1)
          / stride + 1)`` (``ceil`` with ``ceil_mode``).

    Example::

        >>> pool = nn.MaxPool1d(2)
        >>> pool(torch.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]))
        tensor([[3., 2.]])
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return self._pool(F.max_pool1d, input)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling: the maximum of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.max_pool2d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the flat position of each maximum (for
            :class:`MaxUnpool2d`). Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Example::

        >>> pool = nn.MaxPool2d(3, stride=2, padding=1)
        >>> pool(torch.ones(2, 4, 9, 9)).shape
        ferrograd.Size([2, 4, 5, 5])
        >>> nn.MaxPool2d(2)(torch.arange(16.0).reshape(1, 4, 4))
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return self._pool(F.max_pool2d, input)


def _ntuple(v, n):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,) * n


def _window_repr(self) -> str:
    return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(Module):
    """1-d average pooling: the mean of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.avg_pool1d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides, at most half the
            kernel size. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - kernel_size) / stride + 1)``
          (``ceil`` with ``ceil_mode``).

    Example::

        >>> nn.AvgPool1d(2)(torch.tensor([[1.0, 3.0, 2.0, 0.0]]))
        tensor([[2., 1.]])
    """

    def __init__(
        self,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    extra_repr = _window_repr

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )


class AvgPool2d(Module):
    """2-d average pooling: the mean of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.avg_pool2d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides, at most half the
            kernel size. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``
          (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Example::

        >>> pool = nn.AvgPool2d(2)
        >>> pool(torch.arange(16.0).reshape(1, 1, 4, 4))
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
    """

    def __init__(
        self,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    extra_repr = _window_repr

    def forward(self, input: Tensor) -> Tensor:
        return self._pool(F.avg_pool2d, input)

    def _pool(self, pool, input):
        return pool(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _AdaptivePool(Module):
    def __init__(self, output_size: IntOrInts | None, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPool(_AdaptivePool):
    def __init__(self, output_size: IntOrInts | None) -> None:
        super().__init__(output_size)
        del self.return_indices


class AdaptiveAvgPool1d(_AdaptiveAvgPool):
    """1-d average pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``L_out``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Example::

        >>> nn.AdaptiveAvgPool1d(2)(torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]))
        tensor([[2., 4.]])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptiveAvgPool):
    """2-d average pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a ``None``
            entry keeps that input size.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Example::

        >>> pool = nn.AdaptiveAvgPool2d((1, 1))
        >>> pool(torch.ones(8, 64, 7, 5)).shape
        ferrograd.Size([8, 64, 1, 1])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """1-d max pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``L_out``.
        return_indices (bool): also return the flat position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Example::

        >>> nn.AdaptiveMaxPool1d(2)(torch.tensor([[1.0, 3.0, 2.0, 5.0, 4.0]]))
        tensor([[3., 5.]])
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """2-d max pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a ``None``
            entry keeps that input size.
        return_indices (bool): also return the flat position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Example::

        >>> pool = nn.AdaptiveMaxPool2d(2, return_indices=True)
        >>> out, idx = pool(torch.arange(16.0).reshape(1, 1, 4, 4))
        >>> out, idx
        (tensor([[[[ 5.,  7.],
                  [13., 15.]]]]), tensor([[[[ 5,  7],
                  [13, 15]]]]))
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


__all__ += ["MaxPool3d", "AvgPool3d"]


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling: the maximum of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.max_pool3d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        return_indices (bool): also return the flat position of each maximum (for
            :class:`MaxUnpool3d`). Default: ``False``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1) - 1)
          / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``H_out`` and ``W_out`` likewise.

    Example::

        >>> pool = nn.MaxPool3d(2, ceil_mode=True)
        >>> pool(torch.ones(1, 2, 5, 6, 7)).shape
        ferrograd.Size([1, 2, 3, 3, 4])
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return self._pool(F.max_pool3d, input)


class AvgPool3d(AvgPool2d):
    """3-d average pooling: the mean of each ``kernel_size`` window (see
    :func:`~ferrograd.nn.functional.avg_pool3d`).

    Args:
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides, at most half the
            kernel size. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``
          (``ceil`` with ``ceil_mode``), ``H_out`` and ``W_out`` likewise.

    Example::

        >>> nn.AvgPool3d(2, stride=1)(torch.ones(1, 2, 4, 4, 4)).shape
        ferrograd.Size([1, 2, 3, 3, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        return self._pool(F.avg_pool3d, input)


# ----- LP pooling, max unpooling, 3-d adaptive pooling -----------------------------------------

__all__ += [
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "AdaptiveAvgPool3d",
    "AdaptiveMaxPool3d",
]


class _LPPoolNd(Module):
    def __init__(
        self,
        norm_type: float,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )

    def _pool(self, pool, input):
        return pool(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type`` (``inf`` gives max pooling of ``|x|``; see
    :func:`~ferrograd.nn.functional.lp_pool1d`).

    Args:
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in - kernel_size) / stride + 1)``.

    Example::

        >>> nn.LPPool1d(2, 2)(torch.tensor([[3.0, 4.0, 1.0, 1.0]]))
        tensor([[5.0000, 1.4142]])
    """

    def forward(self, input: Tensor) -> Tensor:
        return self._pool(F.lp_pool1d, input)


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type`` (``inf`` gives max pooling of ``|x|``; see
    :func:`~ferrograd.nn.functional.lp_pool2d`).

    Args:
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in - kernel_size[0]) / stride[0] + 1)``, ``W_out`` likewise.

    Example::

        >>> nn.LPPool2d(1, 2)(torch.ones(1, 1, 4, 4))
        tensor([[[[4., 4.],
                  [4., 4.]]]])
    """

    def forward(self, input: Tensor) -> Tensor:
        return self._pool(F.lp_pool2d, input)


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type`` (``inf`` gives max pooling of ``|x|``; see
    :func:`~ferrograd.nn.functional.lp_pool3d`).

    Args:
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = floor((D_in - kernel_size[0]) / stride[0] + 1)``, ``H_out`` and
          ``W_out`` likewise.

    Example::

        >>> nn.LPPool3d(2, 2)(torch.ones(1, 2, 4, 4, 4)).shape
        ferrograd.Size([1, 2, 2, 2, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        return self._pool(F.lp_pool3d, input)


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(
        self,
        kernel_size: IntOrInts,
        stride: IntOrInts | None = None,
        padding: IntOrInts = 0,
    ) -> None:
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    extra_repr = _window_repr

    def _unpool(self, unpool, input, indices, output_size):
        return unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool1d`: each value goes back to the position its index
    names; every other position is 0 (see :func:`~ferrograd.nn.functional.max_unpool1d`).

    Its ``forward(input, indices, output_size=None)`` takes the pooled values, the
    indices ``MaxPool1d(..., return_indices=True)`` returned and, optionally, the
    exact output size (to pick among the sizes that pool to the input's).

    Args:
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``; indices of the same shape.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = (L_in - 1) * stride - 2 * padding + kernel_size``
          (or ``output_size``).

    Example::

        >>> pool, unpool = nn.MaxPool1d(2, return_indices=True), nn.MaxUnpool1d(2)
        >>> out, idx = pool(torch.tensor([[1.0, 3.0, 4.0, 2.0]]))
        >>> unpool(out, idx)
        tensor([[0., 3., 4., 0.]])
    """

    _n = 1

    def forward(
        self,
        input: Tensor,
        indices: Tensor,
        output_size: Sequence[int] | None = None,
    ) -> Tensor:
        return self._unpool(F.max_unpool1d, input, indices, output_size)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool2d`: each value goes back to the position its index
    names; every other position is 0 (see :func:`~ferrograd.nn.functional.max_unpool2d`).

    Its ``forward(input, indices, output_size=None)`` takes the pooled values, the
    indices ``MaxPool2d(..., return_indices=True)`` returned and, optionally, the
    exact output size (to pick among the sizes that pool to the input's).

    Args:
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``; indices of the same shape.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = (H_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]``, ``W_out`` likewise
          (or ``output_size``).

    Example::

        >>> pool, unpool = nn.MaxPool2d(2, return_indices=True), nn.MaxUnpool2d(2)
        >>> out, idx = pool(torch.arange(16.0).reshape(1, 1, 4, 4))
        >>> unpool(out, idx)
        tensor([[[[ 0.,  0.,  0.,  0.],
                  [ 0.,  5.,  0.,  7.],
                  [ 0.,  0.,  0.,  0.],
                  [ 0., 13.,  0., 15.]]]])
        >>> unpool(out, idx, output_size=(5, 5)).shape
        ferrograd.Size([1, 1, 5, 5])
    """

    _n = 2

    def forward(
        self,
        input: Tensor,
        indices: Tensor,
        output_size: Sequence[int] | None = None,
    ) -> Tensor:
        return self._unpool(F.max_unpool2d, input, indices, output_size)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of :class:`MaxPool3d`: each value goes back to the position its index
    names; every other position is 0 (see :func:`~ferrograd.nn.functional.max_unpool3d`).

    Its ``forward(input, indices, output_size=None)`` takes the pooled values, the
    indices ``MaxPool3d(..., return_indices=True)`` returned and, optionally, the
    exact output size (to pick among the sizes that pool to the input's).

    Args:
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``; indices of
          the same shape.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``, where
          ``D_out = (D_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]``, ``H_out``
          and ``W_out`` likewise (or ``output_size``).

    Example::

        >>> pool, unpool = nn.MaxPool3d(2, return_indices=True), nn.MaxUnpool3d(2)
        >>> out, idx = pool(torch.ones(1, 1, 4, 4, 4))
        >>> unpool(out, idx).shape
        ferrograd.Size([1, 1, 4, 4, 4])
    """

    _n = 3

    def forward(
        self,
        input: Tensor,
        indices: Tensor,
        output_size: Sequence[int] | None = None,
    ) -> Tensor:
        return self._unpool(F.max_unpool3d, input, indices, output_size)


class AdaptiveAvgPool3d(_AdaptiveAvgPool):
    """3-d average pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for all; a ``None``
            entry keeps that input size.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Example::

        >>> nn.AdaptiveAvgPool3d((1, None, 2))(torch.ones(2, 3, 4, 5, 6)).shape
        ferrograd.Size([2, 3, 1, 5, 2])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    """3-d max pooling to a fixed output size, whatever the input size: output cell ``i``
    covers input positions ``floor(i * in / out)`` to ``ceil((i + 1) * in / out) - 1`` along
    each dimension.

    Args:
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for all; a ``None``
            entry keeps that input size.
        return_indices (bool): also return the flat position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Example::

        >>> nn.AdaptiveMaxPool3d(1)(torch.arange(8.0).reshape(1, 2, 2, 2)).flatten()
        tensor([7.])
    """

    def forward(self, input: Tensor) -> Tensor | tuple[Tensor, Tensor]:
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)
