"""Max pooling in one and two dimensions (``max_pool1d/2d`` and their
``*_with_indices`` forms, whose indices :mod:`.unpooling` scatters back).

These normalise PyTorch's arguments and call one Rust op each (a 1-d pool is
the 2-d kernel over a height of 1); kernels and backward rules live in
``src/ops/pool.rs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from ... import _C
from ._args import _check_tensor, _tuple
from ._pool_args import _check_1d, _check_pool, _stride
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
    _check_tensor(input)
    kernel = _tuple(kernel_size, 2, "kernel_size")
    stride = _stride(stride, kernel_size, 2)
    padding = _tuple(padding, 2, "padding")
    dilation = _tuple(dilation, 2, "dilation")
    _check_pool(kernel, stride, padding, dilation, "HW")
    return _C.max_pool2d_with_indices(input, kernel, stride, padding, dilation, bool(ceil_mode))


@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool2d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
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
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


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
    _check_1d(input, "max_pool1d")
    (k,) = _tuple(kernel_size, 1, "kernel_size")
    (st,) = _stride(stride, kernel_size, 1)
    (p,) = _tuple(padding, 1, "padding")
    (d,) = _tuple(dilation, 1, "dilation")
    # PyTorch's max_pool1d checks and words.
    if k <= 0:
        raise RuntimeError(f"max_pool1d() kernel_size must be greater than zero, but got {k}")
    if st <= 0:
        raise RuntimeError(f"max_pool1d() stride must be greater than zero, but got {st}")
    if p < 0:
        raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {p}")
    if p > k // 2:
        raise RuntimeError(
            "max_pool1d() padding should be at most half of kernel size, but got "
            f"padding={p} and kernel_size={k}"
        )
    if d <= 0:
        raise RuntimeError(f"max_pool1d() dilation must be greater than zero, but got {d}")
    out, idx = _C.max_pool2d_with_indices(
        input.unsqueeze(-2), [1, k], [1, st], [0, p], [1, d], bool(ceil_mode)
    )
    return out.squeeze(-2), idx.squeeze(-2)


@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool1d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
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
    out, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


for _name, _rank in [
    ("max_pool1d", 3), ("max_pool1d_with_indices", 3), ("max_pool2d", 4),
    ("max_pool2d_with_indices", 4),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank
