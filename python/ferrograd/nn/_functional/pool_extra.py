"""Power-average pooling (``lp_pool1d/2d/3d``), max unpooling
(``max_unpool1d/2d/3d``), 3-d adaptive pooling and the deprecated
``upsample*`` names, composed from the existing pooling, scatter and
interpolation ops (so their gradients of every order come from those).

Adaptive pooling is separable: every output bin is the product of one 1-d bin
per dimension, so the 3-d average (or maximum) is the 2-d one over each depth
slice followed by an adaptive pool over depth alone. For the maximum, taking
the first maximal depth of the first in-plane maxima gives the first maximum in
PyTorch's (depth, row, column) scan order."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Literal, overload

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ..._replay import replayed
from ..._tensor_api._common import _vmap_level
from ._args import _tuple, tensor_args
from .conv3d import avg_pool3d, max_pool3d
from .interpolation import interpolate
from .pooling import (
    _adaptive_size,
    adaptive_avg_pool2d,
    adaptive_max_pool2d_with_indices,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor
    from ..._typing import FloatOrFloats, IntOrInts

__all__ = [
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "upsample",
    "upsample_nearest",
    "upsample_bilinear",
]


def _lp(input, norm_type, kernel_size, stride, ceil_mode, n, max_pool, avg_pool):
    if isinstance(norm_type, (int, float)):
        if norm_type == 0:
            raise ValueError(f"norm_type must be a non-zero value, but got {norm_type}")
        if norm_type == float("inf"):
            return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
        if norm_type == -float("inf"):
            return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    ks = _tuple(kernel_size, n, "kernel_size")
    volume = 1
    for k in ks:
        volume *= k
    if stride is not None:
        out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg_pool(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
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


# ----- max unpooling -----------------------------------------------------------------------------


_SCALAR_TYPE = {
    "ferrograd.float32": "Float",
    "ferrograd.float64": "Double",
    "ferrograd.bool": "Bool",
    "ferrograd.int32": "Int",
}


def _unpool_output_size(input, kernel_size, stride, padding, output_size):
    input_size = input.shape
    n = len(kernel_size)
    default_size = [
        (input_size[-n + d] - 1) * stride[d] + kernel_size[d] - 2 * padding[d] for d in range(n)
    ]
    if output_size is None:
        return default_size
    output_size = list(output_size)
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(
            f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
            f"a length of '{len(output_size)}'"
        )
    for d in range(n):
        min_size = default_size[d] - stride[d]
        max_size = default_size[d] + stride[d]
        if not min_size < output_size[d] < max_size:
            raise ValueError(
                f'invalid output_size "{tuple(output_size)}" (dim {d} must be between '
                f"{min_size} and {max_size})"
            )
    return [int(s) for s in output_size]


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n, name):
    lid, b = _vmap_level(input, indices)
    if lid:
        # Under vmap: the samples' (N, C) rows (or a sample's C as N) are one call.
        size = b.batch_size_of((input, indices), lid)
        vi, vx = b.materialize(input, lid, size), b.materialize(indices, lid, size)
        if vi.dim() - 1 != n + 2:
            out = _max_unpool(vi, vx, kernel_size, stride, padding, output_size, n, name)
            return b.wrap(out, lid)
        rows = (size * vi.shape[1],)
        out = _max_unpool(vi.reshape(*rows, *vi.shape[2:]), vx.reshape(*rows, *vx.shape[2:]),
                          kernel_size, stride, padding, output_size, n, name)
        return b.wrap(out.reshape(size, vi.shape[1], *out.shape[1:]), lid)
    _check_tensor(name, indices, "indices", 2, passes=None)
    if indices.dtype != _C.int64:
        kind = _SCALAR_TYPE.get(str(indices.dtype), str(indices.dtype))
        raise RuntimeError(f"elements in indices should be type int64 but got: {kind}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(
            "Expected shape of indices to be same as that of the input tensor "
            f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}"
        )
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(
            f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got {list(input.shape)}"
        )
    ks = _tuple(kernel_size, n, "kernel_size")
    st = ks if stride is None else _tuple(stride, n, "stride")
    pd = _tuple(padding, n, "padding")
    out_size = _unpool_output_size(input, ks, st, pd, output_size)
    volume = 1
    for s in out_size:
        volume *= s
    lead = tuple(input.shape[: input.dim() - n])
    flat_idx = indices.reshape(*lead, -1)
    if flat_idx.numel():
        lo, hi = int(flat_idx.min().item()), int(flat_idx.max().item())
        if lo < 0 or hi >= volume:
            bad = lo if lo < 0 else hi
            dims = "x".join(str(s) for s in out_size)
            raise RuntimeError(
                f"Found an invalid max index: {bad} (output volumes are of size {dims})"
            )
    out = _C.zeros(*lead, volume, dtype=input.dtype)
    out = out.scatter(-1, flat_idx, input.reshape(*lead, -1))
    return out.reshape(*lead, *out_size)


@tensor_args("input")
@replayed("max_unpool1d")
def max_unpool1d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """Partial inverse of ``max_pool1d``: each value of ``input`` goes to the position its
    index names in a zero tensor; every other position stays 0.

    Args:
        input (Tensor): the pooled values, ``(N, C, L_in)`` or ``(C, L_in)``.
        indices (Tensor): int64, ``input``'s shape, the flat in-plane positions
            returned by ``max_pool1d(..., return_indices=True)``.
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.
        output_size (tuple, optional): the output's spatial size (with or without the
            leading two dimensions), to pick among the sizes that pool to the input's.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, L_in)`` or ``(C, L_in)``.
        - Output: ``(N, C, L_out)`` or ``(C, L_out)``, where
          ``L_out = (L_in - 1) * stride - 2 * padding + kernel_size`` (or ``output_size``).

    Returns:
        Tensor: the unpooled tensor.

    Example::

        >>> out, idx = F.max_pool1d(torch.tensor([[1.0, 3.0, 4.0, 2.0]]), 2, return_indices=True)
        >>> F.max_unpool1d(out, idx, 2)
        tensor([[0., 3., 4., 0.]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1, "max_unpool1d")


@tensor_args("input")
@_autocast_op("max_unpool2d")
@replayed("max_unpool2d")
def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """Partial inverse of ``max_pool2d``: each value of ``input`` goes to the position its
    index names in a zero tensor; every other position stays 0.

    Args:
        input (Tensor): the pooled values, ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        indices (Tensor): int64, ``input``'s shape, the flat in-plane positions
            returned by ``max_pool2d(..., return_indices=True)``.
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.
        output_size (tuple, optional): the output's spatial size (with or without the
            leading two dimensions), to pick among the sizes that pool to the input's.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(C, H_in, W_in)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(C, H_out, W_out)``,
          where ``H_out = (H_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]``,
          ``W_out`` likewise (or ``output_size``).

    Returns:
        Tensor: the unpooled tensor.

    Example::

        >>> x = torch.arange(16.0).reshape(1, 1, 4, 4)
        >>> out, idx = F.max_pool2d(x, 2, return_indices=True)
        >>> F.max_unpool2d(out, idx, 2)
        tensor([[[[ 0.,  0.,  0.,  0.],
                  [ 0.,  5.,  0.,  7.],
                  [ 0.,  0.,  0.,  0.],
                  [ 0., 13.,  0., 15.]]]])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2, "max_unpool2d")


@tensor_args("input")
@_autocast_op("max_unpool3d")
@replayed("max_unpool3d")
def max_unpool3d(
    input: Tensor,
    indices: Tensor,
    kernel_size: IntOrInts,
    stride: IntOrInts | None = None,
    padding: IntOrInts = 0,
    output_size: Sequence[int] | None = None,
) -> Tensor:
    """Partial inverse of ``max_pool3d``: each value of ``input`` goes to the position its
    index names in a zero tensor; every other position stays 0.

    Args:
        input (Tensor): the pooled values, ``(N, C, D_in, H_in, W_in)`` or
            ``(C, D_in, H_in, W_in)``.
        indices (Tensor): int64, ``input``'s shape, the flat in-plane positions
            returned by ``max_pool3d(..., return_indices=True)``.
        kernel_size (int or tuple): the pooling window size.
        stride (int or tuple, optional): the pooling step. Default: ``kernel_size``.
        padding (int or tuple): the pooling padding. Default: ``0``.
        output_size (tuple, optional): the output's spatial size (with or without the
            leading two dimensions), to pick among the sizes that pool to the input's.
            Default: ``None``.

    Shape:
        - Input: ``(N, C, D_in, H_in, W_in)`` or ``(C, D_in, H_in, W_in)``.
        - Output: ``(N, C, D_out, H_out, W_out)`` or ``(C, D_out, H_out, W_out)``,
          where ``D_out = (D_in - 1) * stride[0] - 2 * padding[0] + kernel_size[0]``,
          ``H_out`` and ``W_out`` likewise (or ``output_size``).

    Returns:
        Tensor: the unpooled tensor.

    Example::

        >>> x = torch.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> out, idx = F.max_pool3d(x, 2, return_indices=True)
        >>> out.flatten(), idx.flatten()
        (tensor([7.]), tensor([7]))
        >>> F.max_unpool3d(out, idx, 2).shape
        ferrograd.Size([1, 1, 2, 2, 2])
    """
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3, "max_unpool3d")


# ----- 3-d adaptive pooling ----------------------------------------------------------------------


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
    n, c, d, h, w = x.shape
    # A tensor goes to the native 2-d kernel directly (the sizes are resolved); a
    # tensor-like value (vmap's) to the functional form, which dispatches it.
    pool = _C.adaptive_avg_pool2d if isinstance(x, _C.Tensor) else adaptive_avg_pool2d
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
    n, c, d, h, w = x.shape
    # As in adaptive_avg_pool3d: the native kernel for a tensor.
    pool = _C.adaptive_max_pool2d if isinstance(x, _C.Tensor) else adaptive_max_pool2d_with_indices
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


# ----- deprecated upsampling names ---------------------------------------------------------------


def upsample(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated name of :func:`interpolate` (it warns); use :func:`interpolate`.

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.
        mode (str): as in :func:`interpolate`. Default: ``'nearest'``.
        align_corners (bool, optional): as in :func:`interpolate`. Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample(torch.tensor([[[1.0, 2.0]]]), scale_factor=2)
        tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')`` (it warns).

    Args:
        input (Tensor): ``(N, C, L)`` or ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample_nearest(torch.tensor([[[1.0, 2.0]]]), size=4)
        tensor([[[1., 1., 2., 2.]]])
    """
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(
    input: Tensor,
    size: IntOrInts | None = None,
    scale_factor: FloatOrFloats | None = None,
) -> Tensor:
    """Deprecated:
    ``interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)`` (it
    warns).

    Args:
        input (Tensor): ``(N, C, H, W)``.
        size (int or tuple, optional): the output spatial size. Default: ``None``.
        scale_factor (float or tuple, optional): the multiplier of the spatial size.
            Default: ``None``.

    Returns:
        Tensor: the resampled input.

    Example::

        >>> F.upsample_bilinear(torch.tensor([[[[0.0, 2.0]]]]), size=(1, 3))
        tensor([[[[0., 1., 2.]]]])
    """
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
