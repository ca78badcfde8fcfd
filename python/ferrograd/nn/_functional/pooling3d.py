"""3-d pooling (``max_pool3d``, ``avg_pool3d``, ``adaptive_avg_pool3d``,
``adaptive_max_pool3d`` and the ``*_with_indices`` forms): PyTorch's argument
checks here, the pooling in one native call each (``src/ops/pool3d.rs``).

The native ops run the 2-d kernels over each depth slice (depths folded into
channels), then pool the depth windows with the same kernels (the slices'
results as a ``(D, H_out * W_out)`` image under a ``(kD, 1)`` window): an
average's divisor is the product of the per-dimension window sizes, and the
first maximal depth of the first in-plane maxima is the first maximum in
PyTorch's (depth, row, column) scan order. A tensor-like input (vmap's) takes
the same two passes through the functional 2-d forms, which dispatch it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ._args import tensor_args
from ._pool_args import (
    _adaptive_max_pool_typed,
    _adaptive_size,
    _batch_of_one,
    _check_input,
    _max_pool_typed,
    _window,
)
from ._rowwise import _rowwise
from .adaptive_pooling import adaptive_avg_pool2d, adaptive_max_pool2d_with_indices

if TYPE_CHECKING:
    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = [
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
]


def _check_depth(input, k, s, p, d, ceil_mode):
    """PyTorch's refusal of a pool with no output depth (``pooling_output_shape``)."""
    C, D, H, W = input.shape[-4:]
    num = D + 2 * p[0] - d[0] * (k[0] - 1) - 1
    out = (num + (s[0] - 1 if ceil_mode else 0)) // s[0] + 1
    if ceil_mode and (out - 1) * s[0] >= D + p[0]:
        out -= 1
    if out <= 0:
        raise RuntimeError(
            f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size is too small"
        )


def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`max_pool3d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions
        ``d * H_in * W_in + h * W_in + w`` in each input volume.

    Example::

        >>> x = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> F.max_pool3d_with_indices(x, 2)
        (tensor([[[[[7.]]]]]), tensor([[[[[7]]]]]))
    """
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)


def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode):
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, dilation, ceil_mode)
        return _dispatch.dispatch(max_pool3d_with_indices, args)
    _check_input(input, 3, "max_pool3d")
    k, s, p, d = _window(3, kernel_size, stride, padding, dilation, "max_pool3d")
    _check_depth(input, k, s, p, d, ceil_mode)
    # Both passes and the indices in one native call (`src/ops/pool3d.rs`).
    return _batch_of_one(3, _C.max_pool3d_with_indices, input, k, s, p, d, bool(ceil_mode))


@_max_pool_typed
@_autocast_op("max_pool3d")
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """3-d max pooling: the maximum of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit ``-inf`` padding on both sides, at most half
            the kernel size. Default: ``0``.
        dilation (int or tuple): the spacing between window elements. Default: ``1``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        return_indices (bool): also return the flat in-volume position of each
            maximum. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or the unbatched form, where
          ``D_out = floor((D_in + 2 * padding[0] - dilation[0] * (kernel_size[0] - 1)
          - 1) / stride[0] + 1)`` (``ceil`` with ``ceil_mode``), ``H_out`` and
          ``W_out`` likewise.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.max_pool3d(torch.ones(1, 1, 4, 5, 6), 2).shape
        ferrograd.Size([1, 1, 2, 2, 3])
    """
    if return_indices:
        return max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


@_autocast_op("avg_pool3d")
def avg_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """3-d average pooling: the mean of each ``kernel_size`` window.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        kernel_size (int or tuple): the window size.
        stride (int or tuple, optional): the window step. Default: ``kernel_size``.
        padding (int or tuple): implicit zero padding on both sides. Default: ``0``.
        ceil_mode (bool): round the output size up instead of down. Default: ``False``.
        count_include_pad (bool): count the padding zeros in the divisor.
            Default: ``True``.
        divisor_override (int, optional): divide every window's sum by this instead.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or the unbatched form, where
          ``D_out = floor((D_in + 2 * padding[0] - kernel_size[0]) / stride[0] + 1)``,
          ``H_out`` and ``W_out`` likewise.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.avg_pool3d(torch.arange(8.0).reshape(1, 1, 2, 2, 2), 2).flatten()
        tensor([3.5000])
    """
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return _dispatch.dispatch(avg_pool3d, args)
    _check_input(input, 3, "avg_pool3d")
    k, s, p, d = _window(3, kernel_size, stride, padding, 1, "avg_pool3d")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    _check_depth(input, k, s, p, d, ceil_mode)
    divisor = None if divisor_override is None else int(divisor_override)
    flags = bool(ceil_mode), bool(count_include_pad), divisor
    # The in-plane and depth passes in one native call (`src/ops/pool3d.rs`).
    return _batch_of_one(3, _C.avg_pool3d, input, k, s, p, *flags)


# ----- adaptive pooling ------------------------------------------------------------------------


@tensor_args("input")
@_autocast_op("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input: Tensor, output_size: IntOrInts) -> Tensor:
    """3-d average pooling to a fixed output size, whatever the input size (the bins of
    :func:`adaptive_avg_pool2d`, per dimension).

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for all; a
            ``None`` entry keeps that input size.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Returns:
        Tensor: the pooled input.

    Example::

        >>> F.adaptive_avg_pool3d(torch.ones(2, 3, 5, 6, 7), (1, 2, None)).shape
        ferrograd.Size([2, 3, 1, 2, 7])
        >>> F.adaptive_avg_pool3d(torch.arange(8.0).reshape(1, 2, 2, 2), 1).flatten()
        tensor([3.5000])
    """
    _check_input(input, 3, "adaptive_avg_pool3d")
    return _batch_of_one(3, _adaptive_avg_pool3d, input, output_size)


def _adaptive_avg_pool3d(x, output_size):
    od, oh, ow = _adaptive_size(x, output_size, 3)
    if isinstance(x, _C.Tensor):
        # Both passes in one native call (`src/ops/pool3d.rs`).
        return _C.adaptive_avg_pool3d(x, [od, oh, ow])
    n, c, d, h, w = x.shape
    # A tensor-like value (vmap's) through the functional 2-d form, which dispatches it.
    pool = adaptive_avg_pool2d
    planes = pool(x.reshape(n, c * d, h, w), [oh, ow])
    out = pool(planes.reshape(n * c, 1, d, oh * ow), [od, oh * ow])
    return out.reshape(n, c, od, oh, ow)


@tensor_args("input")
@_autocast_op("adaptive_max_pool3d_with_indices")
def adaptive_max_pool3d_with_indices(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = True,
) -> tuple[Tensor, Tensor]:
    """:func:`adaptive_max_pool3d` that always returns ``(output, indices)``.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for all.
        return_indices (bool): ignored; the indices are always returned.
            Default: ``True``.

    Returns:
        tuple: ``(output, indices)``, the indices int64 flat positions
        ``d * H_in * W_in + h * W_in + w`` in each input volume.

    Example::

        >>> x = torch.tensor([1.0, 7.0, 3.0, 2.0, 5.0, 0.0, 4.0, 6.0]).reshape(1, 2, 2, 2)
        >>> F.adaptive_max_pool3d_with_indices(x, 1)
        (tensor([[[[7.]]]]), tensor([[[[1]]]]))
    """
    return _adaptive_max_pool3d(input, output_size, True)


def _adaptive_max_pool3d(input, output_size, with_indices):
    _check_input(input, 3, "adaptive_max_pool3d")
    return _batch_of_one(3, _adaptive_max_batched, input, output_size, with_indices)


def _adaptive_max_batched(x, output_size, with_indices):
    od, oh, ow = _adaptive_size(x, output_size, 3)
    if isinstance(x, _C.Tensor):
        # Both passes and the indices in one native call (`src/ops/pool3d.rs`).
        out, indices = _C.adaptive_max_pool3d(x, [od, oh, ow])
        return (out, indices) if with_indices else out
    n, c, d, h, w = x.shape
    # A tensor-like value (vmap's) through the functional 2-d form, which dispatches it.
    pool = adaptive_max_pool2d_with_indices
    planes, where = pool(x.reshape(n, c * d, h, w), [oh, ow])
    out, idx = pool(planes.reshape(n * c, 1, d, oh * ow), [od, oh * ow])
    out = out.reshape(n, c, od, oh, ow)
    if not with_indices:
        return out
    # The second pool's flat index is depth * (oh * ow) + column.
    depth = idx.reshape(n, c, od, oh * ow) // (oh * ow)
    in_plane = where.reshape(n, c, d, oh * ow).gather(2, depth)
    return out, (depth * (h * w) + in_plane).reshape(n, c, od, oh, ow)


@_adaptive_max_pool_typed
@_autocast_op("adaptive_max_pool3d")
def adaptive_max_pool3d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    """3-d max pooling to a fixed output size, whatever the input size.

    Args:
        input (Tensor): ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        output_size (int or tuple): ``(D_out, H_out, W_out)``, or one int for all; a
            ``None`` entry keeps that input size.
        return_indices (bool): also return the flat in-volume position of each
            maximum. Default: ``False``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``.

    Returns:
        Tensor or tuple: the pooled input, and the indices with ``return_indices``.

    Example::

        >>> F.adaptive_max_pool3d(torch.arange(8.0).reshape(1, 2, 2, 2), (2, 1, 1)).flatten()
        tensor([3., 7.])
    """
    if return_indices:
        return adaptive_max_pool3d_with_indices(input, output_size)
    # The refusal adaptive_max_pool3d_with_indices' argument check gave.
    _check_tensor("adaptive_max_pool3d_with_indices", input)
    return _adaptive_max_pool3d(input, output_size, False)


max_pool3d = _rowwise(max_pool3d, 5)
max_pool3d_with_indices = _rowwise(max_pool3d_with_indices, 5)
avg_pool3d = _rowwise(avg_pool3d, 5)
