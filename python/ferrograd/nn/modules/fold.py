"""``Fold`` and ``Unfold``: col2im and im2col as layers."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sums sliding blocks ``(N, C*kH*kW, L)`` back into ``(N, C, *output_size)``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self):
        return (
            "output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
            "padding={padding}, stride={stride}".format(**self.__dict__)
        )


class Unfold(Module):
    """Extracts sliding blocks: ``(N, C, H, W)`` -> ``(N, C*kH*kW, L)``."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (
            "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
            "stride={stride}".format(**self.__dict__)
        )
