"""Sliding blocks: ``unfold`` (im2col) and its adjoint ``fold`` (col2im), one
Rust op each."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ._args import _check_tensor, _tuple
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["unfold", "fold"]


def unfold(
    input: Tensor,
    kernel_size: IntOrInts,
    dilation: IntOrInts = 1,
    padding: IntOrInts = 0,
    stride: IntOrInts = 1,
) -> Tensor:
    """Extracts sliding local blocks of a batched image (im2col): each column of the result
    holds one ``kernel_size`` block of every channel.

    Args:
        input (Tensor): ``(N, C, H, W)`` or unbatched ``(C, H, W)``.
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C, H, W)`` or ``(C, H, W)``.
        - Output: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, where ``L`` is the
          number of blocks, ``L = prod over d of floor((size[d] + 2 * padding[d]
          - dilation[d] * (kernel_size[d] - 1) - 1) / stride[d] + 1)``.

    Returns:
        Tensor: the blocks as columns.

    Note:
        Only 4-d (and unbatched 3-d) inputs are supported, as in PyTorch.

    Example::

        >>> x = torch.arange(9.0).reshape(1, 1, 3, 3)
        >>> F.unfold(x, 2)
        tensor([[[0., 1., 3., 4.],
                 [1., 2., 4., 5.],
                 [3., 4., 6., 7.],
                 [4., 5., 7., 8.]]])
    """
    _check_tensor(input)
    args = _sliding_args(kernel_size, dilation, padding, stride)
    return _C.im2col(input, *args)


def _sliding_args(kernel_size, dilation, padding, stride):
    """``unfold``/``fold``'s block geometry, checked in PyTorch's order and words."""
    k = _tuple(kernel_size, 2, "kernel_size")
    d = _tuple(dilation, 2, "dilation")
    p = _tuple(padding, 2, "padding")
    s = _tuple(stride, 2, "stride")
    checks = (("kernel size", k, "kernel", 1), ("stride", s, "stride", 1),
              ("dilation", d, "dilation", 1), ("padding", p, "pad", 0))  # fmt: skip
    for what, v, word, low in checks:
        if min(v) < low:
            rule = "should be non-negative" if low == 0 else "should be greater than zero"
            raise RuntimeError(
                f"{what} {rule}, but got {word}_height: {v[0]} {word}_width: {v[1]}"
            )
    return k, d, p, s


def fold(
    input: Tensor,
    output_size: IntOrInts,
    kernel_size: IntOrInts,
    dilation: IntOrInts = 1,
    padding: IntOrInts = 0,
    stride: IntOrInts = 1,
) -> Tensor:
    """Sums sliding local blocks back into a batched image (col2im), the adjoint of
    :func:`unfold`; overlapping blocks add up.

    Args:
        input (Tensor): ``(N, C * kH * kW, L)`` or unbatched ``(C * kH * kW, L)``.
        output_size (int or tuple): the image size ``(H, W)``.
        kernel_size (int or tuple): the block size ``(kH, kW)``.
        dilation (int or tuple): the spacing between block elements. Default: ``1``.
        padding (int or tuple): implicit zeros on both sides. Default: ``0``.
        stride (int or tuple): the step between blocks. Default: ``1``.

    Shape:
        - Input: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)``, ``L`` the number of
          blocks given by :func:`unfold`'s formula for ``output_size``.
        - Output: ``(N, C, H, W)`` or ``(C, H, W)``.

    Returns:
        Tensor: the image.

    Example::

        >>> x = torch.ones(1, 1, 3, 3)
        >>> F.fold(F.unfold(x, 2), (3, 3), 2)
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """
    _check_tensor(input)
    args = _sliding_args(kernel_size, dilation, padding, stride)
    return _C.col2im(input, _tuple(output_size, 2, "output_size"), *args)


unfold = _rowwise(unfold, 4)
fold = _rowwise(fold, 3)
