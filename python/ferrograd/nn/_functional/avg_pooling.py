"""Average pooling in one and two dimensions (``avg_pool1d/2d``): the mean of
each window, with PyTorch's padding and divisor options.

These normalise PyTorch's arguments and call one Rust op each (a 1-d pool is
the 2-d kernel over a height of 1); kernels and backward rules live in
``src/ops/pool.rs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ._pool_args import _check_input, _window, _with_dim
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["avg_pool1d", "avg_pool2d"]


def avg_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """2-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides, at most half the
            kernel size. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this instead.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``
          (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.avg_pool2d(x, 2)
        tensor([[[[ 2.5000,  4.5000],
                  [10.5000, 12.5000]]]])
        >>> F.avg_pool2d(x, 3, stride=1, padding=1, count_include_pad=False)[0, 0, 0]
        tensor([2.5000, 3.0000, 4.0000, 4.5000])
    """
    _check_input(input, 2, "avg_pool2d")
    k, s, p, _ = _window(2, kernel_size, stride, padding, 1, "avg_pool2d")
    divisor = None if divisor_override is None else int(divisor_override)
    return _C.avg_pool2d(input, k, s, p, bool(ceil_mode), bool(count_include_pad), divisor)


def avg_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """1-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - kernel_size) / stride + 1)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.avg_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[2., 1.]])
    """
    _check_input(input, 1, "avg_pool1d")
    (k,), (s,), (p,), _ = _window(1, kernel_size, stride, padding, 1, "avg_pool1d")
    flags = bool(ceil_mode), bool(count_include_pad), None
    return _with_dim(-2, _C.avg_pool2d, input, [1, k], [1, s], [0, p], *flags)


for _name, _rank in [("avg_pool1d", 3), ("avg_pool2d", 4)]:
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank
