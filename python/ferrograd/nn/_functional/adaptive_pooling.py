"""Adaptive pooling in one and two dimensions (``adaptive_avg_pool1d/2d``,
``adaptive_max_pool1d/2d`` and the ``*_with_indices`` forms): windows chosen
so that the output has a fixed size, whatever the input size.

These normalise PyTorch's arguments and call one Rust op each (a 1-d pool is
the 2-d kernel over a height of 1); kernels and backward rules live in
``src/ops/pool.rs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ._pool_args import _adaptive_max_pool_typed, _adaptive_size, _check_input, _with_dim
from ._rowwise import _rowwise

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
]


def adaptive_avg_pool2d(input: Tensor, output_size: IntOrInts) -> Tensor:
    """2-d average pooling to a fixed output size, whatever the input size.

    Output cell ``i`` along a dimension averages input positions
    ``floor(i * L_in / L_out)`` to ``ceil((i + 1) * L_in / L_out) - 1``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_avg_pool2d(x, 1)
        tensor([[[[7.5000]]]])
        >>> F.adaptive_avg_pool2d(torch.ones(2, 3, 7, 5), (3, None)).shape
        ferrograd.Size([2, 3, 3, 5])
    """
    _check_input(input, 2, "adaptive_avg_pool2d")
    return _C.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2))


def adaptive_avg_pool1d(input: Tensor, output_size: IntOrInts) -> Tensor:
    """1-d average pooling to a fixed output length.

    Output cell ``i`` averages input positions ``floor(i * L_in / L_out)`` to
    ``ceil((i + 1) * L_in / L_out) - 1``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.adaptive_avg_pool1d(torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0]]), 2)
        tensor([[2., 4.]])
    """
    _check_input(input, 1, "adaptive_avg_pool1d")
    size = [1, *_adaptive_size(input, output_size, 1)]
    return _with_dim(-2, _C.adaptive_avg_pool2d, input, size)


def adaptive_max_pool2d_with_indices(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool2d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions in each plane.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_max_pool2d_with_indices(x, 1)
        (tensor([[[[15.]]]]), tensor([[[[15]]]]))
    """
    _check_input(input, 2, "adaptive_max_pool2d")
    return _C.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2))


@_adaptive_max_pool_typed
def adaptive_max_pool2d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """2-d max pooling to a fixed output size, whatever the input size (the windows are those
    of :func:`adaptive_avg_pool2d`).

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        output_size (int or tuple): ``(H_out, W_out)``, or one int for both; a
            ``None`` entry keeps that input size.
        return_indices (bool): also return the flat in-plane position of each
            maximum. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.adaptive_max_pool2d(x, (2, 1))
        tensor([[[[ 7.],
                  [15.]]]])
    """
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool1d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 positions along ``L_in``.

    Example::

        >>> F.adaptive_max_pool1d_with_indices(torch.tensor([[1.0, 3.0, 2.0, 5.0]]), 2)
        (tensor([[3., 5.]]), tensor([[1, 3]]))
    """
    _check_input(input, 1, "adaptive_max_pool1d")
    size = [1, *_adaptive_size(input, output_size, 1)]
    return _with_dim(-2, _C.adaptive_max_pool2d, input, size)


@_adaptive_max_pool_typed
def adaptive_max_pool1d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """1-d max pooling to a fixed output length.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        output_size (int): ``L_out``.
        return_indices (bool): also return the position of each maximum.
            Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.adaptive_max_pool1d(torch.tensor([[1.0, 3.0, 2.0, 5.0, 4.0]]), 2)
        tensor([[3., 5.]])
    """
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


for _name, _rank in [
    ("adaptive_avg_pool1d", 3), ("adaptive_avg_pool2d", 4), ("adaptive_max_pool1d", 3),
    ("adaptive_max_pool1d_with_indices", 3), ("adaptive_max_pool2d", 4),
    ("adaptive_max_pool2d_with_indices", 4),
]:  # fmt: skip
    globals()[_name] = _rowwise(globals()[_name], _rank)
del _name, _rank
