"""Power-average pooling (``lp_pool1d/2d/3d``): ``(sum of x ** p over each
window) ** (1 / p)``, composed from the average and max pools (so its
gradients of every order come from those)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ... import _C
from ._args import _tuple, tensor_args
from .avg_pooling import avg_pool1d, avg_pool2d
from .max_pooling import max_pool1d, max_pool2d
from .pooling3d import avg_pool3d, max_pool3d

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]


def _lp(input, norm_type, kernel_size, stride, ceil_mode, n, max_pool, avg_pool):
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    volume = math.prod(_tuple(kernel_size, n, "kernel_size"))
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (_C.sign(out) * _C.relu(out.abs()) * volume).pow(1.0 / norm_type)


@tensor_args("input")
def lp_pool1d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """1-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type``.

    ``p = inf`` gives max pooling of ``|x|``; ``p = 1`` sum pooling.

    Args:
        input (Tensor): ``(N, C, L_in)`` or ``(C, L_in)``.
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``,
          sized as by average pooling with the same window, e.g.
          ``L_out = floor((L_in - kernel_size) / stride + 1)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.lp_pool1d(torch.tensor([[3.0, 4.0, 1.0, 1.0]]), 2, 2)
        tensor([[5.0000, 1.4142]])
    """
    return _lp(input, norm_type, kernel_size, stride, ceil_mode, 1, max_pool1d, avg_pool1d)


@tensor_args("input")
def lp_pool2d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """2-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type``.

    ``p = inf`` gives max pooling of ``|x|``; ``p = 1`` sum pooling.

    Args:
        input (Tensor): ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``,
          sized as by average pooling with the same window, e.g.
          ``L_out = floor((L_in - kernel_size) / stride + 1)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.lp_pool2d(torch.ones(1, 1, 4, 4), 2, 2)
        tensor([[[[2., 2.],
                  [2., 2.]]]])
    """
    return _lp(input, norm_type, kernel_size, stride, ceil_mode, 2, max_pool2d, avg_pool2d)


@tensor_args("input")
def lp_pool3d(
    input: Tensor,
    norm_type: float,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    ceil_mode: bool = False,
) -> Tensor:
    """3-d power-average pooling: ``(sum of x ** p over each window) ** (1 / p)``, ``p`` the
    ``norm_type``.

    ``p = inf`` gives max pooling of ``|x|``; ``p = 1`` sum pooling.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        norm_type (float): ``p``, not 0.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``,
          sized as by average pooling with the same window, e.g.
          ``L_out = floor((L_in - kernel_size) / stride + 1)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.lp_pool3d(torch.ones(1, 1, 2, 2, 2), 1, 2)
        tensor([[[[[8.]]]]])
    """
    return _lp(input, norm_type, kernel_size, stride, ceil_mode, 3, max_pool3d, avg_pool3d)
