"""Pooling layers: max, average and adaptive pooling in one and two dimensions,
max and average pooling in three."""

from __future__ import annotations

from .. import functional as F
from .module import Module

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
        self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (
            "kernel_size={kernel_size}, stride={stride}, padding={padding}, "
            "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__)
        )


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)``; ``stride`` defaults to
    ``kernel_size``, and ``return_indices`` also returns where each maximum was."""

    def forward(self, input):
        return F.max_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)``; ``stride`` defaults to
    ``kernel_size``, and ``return_indices`` also returns where each maximum was."""

    def forward(self, input):
        return F.max_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


def _single(v):
    return tuple(v) if isinstance(v, (list, tuple)) else (v,)


class AvgPool1d(Module):
    """1-d average pooling over ``(N, C, L)`` or ``(C, L)``."""

    def __init__(
        self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True
    ):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool1d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
        )


class AvgPool2d(Module):
    """2-d average pooling over ``(N, C, H, W)`` or ``(C, H, W)``;
    ``count_include_pad`` counts padding in the divisor, ``divisor_override`` replaces it."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode=False,
        count_include_pad=True,
        divisor_override=None,
    ):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"

    def forward(self, input):
        return F.avg_pool2d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


class _AdaptivePool(Module):
    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average pooling of ``(N, C, L)`` or ``(C, L)`` to length ``output_size``."""

    def __init__(self, output_size):
        super().__init__(output_size)
        del self.return_indices

    def forward(self, input):
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average pooling to a fixed ``output_size`` (an int, or ``(oH, oW)`` where
    ``None`` keeps the input's size)."""

    def __init__(self, output_size):
        super().__init__(output_size)
        del self.return_indices

    def forward(self, input):
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_AdaptivePool):
    """Max pooling of ``(N, C, L)`` or ``(C, L)`` to length ``output_size``."""

    def forward(self, input):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Max pooling to a fixed ``output_size``; ``return_indices`` also returns where
    each maximum was."""

    def forward(self, input):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


__all__ += ["MaxPool3d", "AvgPool3d"]


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``; ``stride``
    defaults to ``kernel_size``, and ``return_indices`` also returns where each
    maximum was (flat positions in each input volume)."""

    def forward(self, input):
        return F.max_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.dilation,
            ceil_mode=self.ceil_mode,
            return_indices=self.return_indices,
        )


class AvgPool3d(AvgPool2d):
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``;
    ``count_include_pad`` counts padding in the divisor, ``divisor_override``
    replaces it."""

    def forward(self, input):
        return F.avg_pool3d(
            input,
            self.kernel_size,
            self.stride,
            self.padding,
            self.ceil_mode,
            self.count_include_pad,
            self.divisor_override,
        )


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
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}, ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPoolNd):
    """Power-average pooling ``(sum x ** p) ** (1 / p)`` over windows of ``(N, C, L)``."""

    def forward(self, input):
        return F.lp_pool1d(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )


class LPPool2d(_LPPoolNd):
    """Power-average pooling ``(sum x ** p) ** (1 / p)`` over windows of ``(N, C, H, W)``."""

    def forward(self, input):
        return F.lp_pool2d(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )


class LPPool3d(_LPPoolNd):
    """Power-average pooling over windows of ``(N, C, D, H, W)``."""

    def forward(self, input):
        return F.lp_pool3d(
            input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode
        )


def _ntuple(v, n):
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return (v,) * n


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, self._n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _ntuple(padding, self._n)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Puts each value of a ``MaxPool1d`` output back at the position its index
    names, zeros elsewhere."""

    _n = 1

    def forward(self, input, indices, output_size=None):
        return F.max_unpool1d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool2d(_MaxUnpoolNd):
    """Puts each value of a ``MaxPool2d`` output back at the position its index
    names, zeros elsewhere."""

    _n = 2

    def forward(self, input, indices, output_size=None):
        return F.max_unpool2d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class MaxUnpool3d(_MaxUnpoolNd):
    """Puts each value of a ``MaxPool3d`` output back at the position its index
    names, zeros elsewhere."""

    _n = 3

    def forward(self, input, indices, output_size=None):
        return F.max_unpool3d(
            input, indices, self.kernel_size, self.stride, self.padding, output_size
        )


class AdaptiveAvgPool3d(_AdaptivePool):
    """Average pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to a fixed
    ``output_size`` (``None`` entries keep the input's size)."""

    def __init__(self, output_size):
        super().__init__(output_size)
        del self.return_indices

    def forward(self, input):
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_AdaptivePool):
    """Max pooling of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` to a fixed
    ``output_size``; ``return_indices`` also returns where each maximum was."""

    def forward(self, input):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)
