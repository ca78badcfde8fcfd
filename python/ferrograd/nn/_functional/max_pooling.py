"""Max pooling in one and two dimensions (``max_pool1d/2d`` and their
``*_with_indices`` forms, whose indices :mod:`.unpooling` scatters back).

These normalise PyTorch's arguments and call one Rust op each (a 1-d pool is
the 2-d kernel over a height of 1); kernels and backward rules live in
``src/ops/pool.rs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ._pool_args import _check_input, _max_pool_typed, _window, _with_dim
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
]


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool2d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions
        ``h * W_in + w`` in each input plane.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> out, idx = F.max_pool2d_with_indices(x, 2)
        >>> idx
        tensor([[[[ 5,  7],
                  [13, 15]]]])
    """
    _check_input(input, 2, "max_pool2d")
    k, s, p, d = _window(2, kernel_size, stride, padding, dilation, "max_pool2d")
    return _C.max_pool2d_with_indices(input, k, s, p, d, bool(ceil_mode))


@_max_pool_typed
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down (a last window
            that starts in the right padding is dropped). Default: ``False``.
        return_indices (bool): also return the flat in-plane position of each
            maximum (for :func:`max_unpool2d`). Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``, where
          ``H_out = floor((H_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1)
          - 1) / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``W_out`` likewise.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.max_pool2d(x, 2)
        tensor([[[[ 5.,  7.],
                  [13., 15.]]]])
        >>> F.max_pool2d(torch.ones(1, 1, 5, 5), 2, ceil_mode=True).shape
        ferrograd.Size([1, 1, 3, 3])
    """
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    _check_input(input, 2, "max_pool2d")
    k, s, p, d = _window(2, kernel_size, stride, padding, dilation, "max_pool2d")
    # The values alone: the kernel finds indices only when the backward needs them.
    return _C.max_pool2d(input, k, s, p, d, bool(ceil_mode))


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool1d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 positions along ``L_in``.

    Example::

        >>> out, idx = F.max_pool1d_with_indices(torch.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        >>> out, idx
        (tensor([[3., 2.]]), tensor([[1, 2]]))
    """
    _check_input(input, 1, "max_pool1d")
    (k,), (s,), (p,), (d,) = _window(1, kernel_size, stride, padding, dilation, "max_pool1d")
    pool = _C.max_pool2d_with_indices
    return _with_dim(-2, pool, input, [1, k], [1, s], [0, p], [1, d], bool(ceil_mode))


@_max_pool_typed
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): also return the position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = floor((L_in + 2 * padding - dilation * (kernel_size - 1) - 1)
          / stride + 1)`` (``ceil`` with ``ceil_mode``).

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2)
        tensor([[3., 2.]])
        >>> F.max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 0.0, 5.0]]), 2, ceil_mode=True)
        tensor([[3., 2., 5.]])
    """
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    _check_input(input, 1, "max_pool1d")
    (k,), (s,), (p,), (d,) = _window(1, kernel_size, stride, padding, dilation, "max_pool1d")
    return _with_dim(-2, _C.max_pool2d, input, [1, k], [1, s], [0, p], [1, d], bool(ceil_mode))


for _name, _rank in [
    ("max_pool1d", 3), ("max_pool1d_with_indices", 3), ("max_pool2d", 4),
    ("max_pool2d_with_indices", 4),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank
