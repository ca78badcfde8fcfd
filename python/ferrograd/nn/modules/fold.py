"""``Fold`` and ``Unfold``: col2im and im2col as layers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import functional as F
from .module import Module

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["Fold", "Unfold"]


class Fold(Module):
    """Sums sliding local blocks back into a batched image (col2im), the adjoint of
    :class:`Unfold`; overlapping blocks add up (see :func:`~ferrograd.nn.functional.fold`).

    Args:
        output_size (int or tuple): the image size ``(H, W)``.
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, ``L`` the number of
          blocks (:class:`Unfold`'s formula).
        - Output: ``(N, C, H, W)`` or ``(C, H, W)``.

    Example::

        >>> fold = nn.Fold(output_size=(4, 5), kernel_size=(2, 2))
        >>> fold(torch.ones(1, 3 * 2 * 2, 12)).shape
        ferrograd.Size([1, 3, 4, 5])
    """

    def __init__(
        self,
        output_size: IntOrInts,
        kernel_size: IntOrInts,
        dilation: IntOrInts = 1,
        padding: IntOrInts = 0,
        stride: IntOrInts = 1,
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return (
            "output_size={output_size}, kernel_size={kernel_size}, dilation={dilation}, "
            "padding={padding}, stride={stride}".format(**self.__dict__)
        )


class Unfold(Module):
    """Extracts sliding local blocks of a batched image (im2col): each column of the output
    holds one block of every channel (see :func:`~ferrograd.nn.functional.unfold`).

    Args:
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, where
          ``L = prod over d of floor((size[d] + 2 * padding[d] - dilation[d]
          * (kernel_size[d] - 1) - 1) / stride[d] + 1)``.

    Example::

        >>> unfold = nn.Unfold(kernel_size=(2, 3))
        >>> unfold(torch.ones(2, 5, 3, 4)).shape
        ferrograd.Size([2, 30, 4])
    """

    def __init__(
        self,
        kernel_size: IntOrInts,
        dilation: IntOrInts = 1,
        padding: IntOrInts = 0,
        stride: IntOrInts = 1,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            "kernel_size={kernel_size}, dilation={dilation}, padding={padding}, "
            "stride={stride}".format(**self.__dict__)
        )
