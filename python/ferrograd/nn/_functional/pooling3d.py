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

from typing import TYPE_CHECKING, Literal, overload

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ._args import _batched, _tuple, tensor_args
from ._pool_args import _adaptive_size, _check_pool, _stride
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


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's ``pooling_output_shape``."""
    num = size + 2 * p - d * (k - 1) - 1
    out = (num + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


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
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, with_indices):
    """``(output, indices)``, the indices None unless ``with_indices``."""
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, dilation, ceil_mode)
        return _dispatch.dispatch(max_pool3d_with_indices, args)
    x, unbatched = _batched(input, "max_pool3d")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = _stride(stride, kernel_size, 3)
    p = _tuple(padding, 3, "padding")
    d = _tuple(dilation, 3, "dilation")
    _check_pool(k, s, p, d, "THW")
    N, C, D, H, W = x.shape
    Do = _pool_out(D, k[0], s[0], p[0], d[0], ceil_mode)
    if Do <= 0:
        raise RuntimeError(
            f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size is too small"
        )
    # Both passes and the indices in one native call (`src/ops/pool3d.rs`).
    values, indices = _C.max_pool3d_with_indices(x, k, s, p, d, bool(ceil_mode))
    if not with_indices:
        return (values.squeeze(0) if unbatched else values), None
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return values, indices


@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def max_pool3d(
    input: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    dilation: IntOrInts = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
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
    return _max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, False)[0]


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
    """3-d average pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)``;
    ``count_include_pad`` counts padding in the divisor, ``divisor_override``
    replaces it."""
    if _dispatch.has_protocol(input) and not _dispatch.is_batched(input):
        args = (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
        return _dispatch.dispatch(avg_pool3d, args)
    x, unbatched = _batched(input, "avg_pool3d")
    k = _tuple(kernel_size, 3, "kernel_size")
    s = _stride(stride, kernel_size, 3)
    p = _tuple(padding, 3, "padding")
    _check_pool(k, s, p, (1, 1, 1), "THW")
    if divisor_override is not None and int(divisor_override) == 0:
        raise RuntimeError("divisor must be not zero")
    N, C, D, H, W = x.shape
    Do = _pool_out(D, k[0], s[0], p[0], 1, ceil_mode)
    if Do <= 0:
        raise RuntimeError(
            f"Given input size: ({C}x{D}x{H}x{W}). Calculated output size is too small"
        )
    # The in-plane and depth passes in one native call (`src/ops/pool3d.rs`).
    result = _C.avg_pool3d(
        x,
        k,
        s,
        p,
        bool(ceil_mode),
        bool(count_include_pad),
        None if divisor_override is None else int(divisor_override),
    )
    return result.squeeze(0) if unbatched else result


# ----- adaptive pooling ------------------------------------------------------------------------


def _check_3d(input, name):
    if input.dim() not in (4, 5):
        sep = ":" if "max" in name else ""
        raise RuntimeError(f"{name}(): Expected 4D or 5D tensor, but got{sep} {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.dim() == 4 else (input, False)


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
    x, unbatched = _check_3d(input, "adaptive_avg_pool3d")
    od, oh, ow = _adaptive_size(x, output_size, 3)
    if isinstance(x, _C.Tensor):
        # Both passes in one native call (`src/ops/pool3d.rs`).
        out = _C.adaptive_avg_pool3d(x, [od, oh, ow])
        return out.squeeze(0) if unbatched else out
    n, c, d, h, w = x.shape
    # A tensor-like value (vmap's) through the functional 2-d form, which dispatches it.
    pool = adaptive_avg_pool2d
    planes = pool(x.reshape(n, c * d, h, w), [oh, ow])
    out = pool(planes.reshape(n * c, 1, d, oh * ow), [od, oh * ow])
    out = out.reshape(n, c, od, oh, ow)
    return out.squeeze(0) if unbatched else out


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
    x, unbatched = _check_3d(input, "adaptive_max_pool3d")
    od, oh, ow = _adaptive_size(x, output_size, 3)
    if isinstance(x, _C.Tensor):
        # Both passes and the indices in one native call (`src/ops/pool3d.rs`).
        out, indices = _C.adaptive_max_pool3d(x, [od, oh, ow])
        if not with_indices:
            return out.squeeze(0) if unbatched else out
        if unbatched:
            out, indices = out.squeeze(0), indices.squeeze(0)
        return out, indices
    n, c, d, h, w = x.shape
    # A tensor-like value (vmap's) through the functional 2-d form, which dispatches it.
    pool = adaptive_max_pool2d_with_indices
    planes, where = pool(x.reshape(n, c * d, h, w), [oh, ow])
    out, idx = pool(planes.reshape(n * c, 1, d, oh * ow), [od, oh * ow])
    if not with_indices:
        out = out.reshape(n, c, od, oh, ow)
        return out.squeeze(0) if unbatched else out
    # The second pool's flat index is depth * (oh * ow) + column.
    depth = idx.reshape(n, c, od, oh * ow) // (oh * ow)
    in_plane = where.reshape(n, c, d, oh * ow).gather(2, depth)
    indices = (depth * (h * w) + in_plane).reshape(n, c, od, oh, ow)
    out = out.reshape(n, c, od, oh, ow)
    if unbatched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    return out, indices


@overload
def adaptive_max_pool3d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[False] = False,
) -> Tensor: ...
@overload
def adaptive_max_pool3d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: Literal[True] = ...,
) -> tuple[Tensor, Tensor]: ...
@overload
def adaptive_max_pool3d(
    input: Tensor,
    output_size: IntOrInts,
    return_indices: bool = False,
) -> Tensor | tuple[Tensor, Tensor]: ...
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
