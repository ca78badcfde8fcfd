"""Max unpooling (``max_unpool1d/2d/3d``), the partial inverse of max pooling:
each value is scattered to the position its index names in a zero volume, so
its gradients of every order come from the scatter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ... import _C
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ..._replay import replayed
from ..._tensor_api._common import _vmap_level
from ._args import tensor_args
from ._pool_args import _check_input, _window

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor
    from ..._typing import IntOrInts

__all__ = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]


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
    _check_input(input, n, name)
    ks, st, pd, _ = _window(n, kernel_size, stride, padding)
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
