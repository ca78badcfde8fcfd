"""``F.grid_sample`` and ``F.affine_grid`` (spatial transformers), both differentiable to
any order with respect to the input and the grid (or ``theta``).

``grid_sample``'s values and first derivatives come from a native kernel
(``_C._grid_sample_forward`` and ``_backward``, PyTorch's sampler arithmetic); where a
graph of the backward is wanted (``create_graph``, forward mode) the backward
differentiates the composition below instead (``_composite``). ``affine_grid`` is a
composition of recorded ops.

``grid_sample`` reads ``input`` (``[N, C, H, W]``, or ``[N, C, D, H, W]``) at the points
of ``grid`` (``[N, H_out, W_out, 2]``, or ``[..., 3]``; ``x`` indexes the width, ``y``
the height, ``z`` the depth), given in ``[-1, 1]`` over the input's extent. A point is
mapped to a pixel coordinate (``align_corners``: -1 and 1 are the centres of the corner
pixels, otherwise their outer edges), then ``padding_mode`` decides what lies outside:
zeros, the border pixel (the coordinate clamped) or the image reflected at its border.
``bilinear`` (trilinear on 5-D input) mixes the 2^d neighbours with weights linear in
the coordinate, so the gradient with respect to the grid is the weights' derivative;
``nearest`` takes the pixel at the coordinate rounded half to even (no gradient with
respect to the grid); ``bicubic`` (4-D) mixes a 4x4 neighbourhood with the cubic
convolution kernel (a = -0.75), applying the padding to each neighbour's index. In the
composition each neighbour is one ``gather`` over the flattened spatial dimensions.
"""

from __future__ import annotations

import math
import operator
import warnings
from typing import TYPE_CHECKING

from ... import _C, _dispatch
from ..._autocast import autocast_op as _autocast_op
from ..._dispatch import check_tensor as _check_tensor
from ...autograd import Function
from ...autograd import grad as _autograd_grad

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._C import Tensor

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed to align_corners=False since "
    "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
    "documentation of grid_sample for details."
)


def _sizes(t):
    return list(t.shape)


def _check(input, grid, mode):
    for name, t in (("input", input), ("grid", grid)):
        _check_tensor("grid_sample", t, name, None, passes=None)
    if input.dim() not in (4, 5) or input.dim() != grid.dim():
        # PyTorch's common checks first look at the batch and the last dimension.
        if input.dim() >= 1 and grid.dim() >= 1 and input.shape[0] != grid.shape[0]:
            raise RuntimeError(
                "grid_sampler(): expected grid and input to have same batch size, but got "
                f"input with sizes {_sizes(input)} and grid with sizes {_sizes(grid)}"
            )
        d = "4D" if input.dim() != 5 else "5D"
        raise RuntimeError(
            f"grid_sampler(): expected {d} input and grid with same number of dimensions, "
            f"but got input with sizes {_sizes(input)} and grid with sizes {_sizes(grid)}"
        )
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(
            "grid_sampler(): expected grid and input to have same batch size, but got input "
            f"with sizes {_sizes(input)} and grid with sizes {_sizes(grid)}"
        )
    d = input.dim() - 2
    if grid.shape[-1] != d:
        raise RuntimeError(
            f"grid_sampler(): expected grid to have size {d} in last dimension, but got grid "
            f"with sizes {_sizes(grid)}"
        )
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(
                "grid_sampler(): expected input to have non-empty spatial dimensions, but "
                f"input has sizes {_sizes(input)} with dimension {i} being empty"
            )
    if mode == "bicubic" and d != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.is_floating_point():
        kernel = "grid_sampler_2d_cpu" if d == 2 else "grid_sampler_3d_cpu"
        name = str(input.dtype).split(".")[-1].capitalize()
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    if grid.dtype != input.dtype:
        names = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short",
                 "int8": "Char", "uint8": "Byte", "bool": "Bool"}  # fmt: skip
        got = str(grid.dtype).split(".")[-1]
        want = str(input.dtype).split(".")[-1]
        raise RuntimeError(
            f"expected scalar type {names.get(want, want)} but found {names.get(got, got)}"
        )


def _unnormalize(coord, size, align_corners):
    """A coordinate in [-1, 1] as a pixel coordinate of an axis of ``size`` pixels."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(x, twice_low, twice_high):
    """``x`` reflected into ``[twice_low / 2, twice_high / 2]`` (as often as needed)."""
    if twice_low == twice_high:
        return x * 0
    low = twice_low / 2
    span = (twice_high - twice_low) / 2
    x = (x - low).abs()
    extra = _C.fmod(x, span)
    flips = (x / span).floor()
    even = _C.fmod(flips, 2) == 0
    return _C.where(even, extra + low, span - extra + low)


def _pad_coordinate(x, size, padding_mode, align_corners):
    """Where ``padding_mode`` puts a pixel coordinate that may lie outside the image."""
    if padding_mode == "border":
        return x.clamp(0, size - 1)
    if padding_mode == "reflection":
        if align_corners:
            x = _reflect(x, 0, 2 * (size - 1))
        else:
            x = _reflect(x, -1, 2 * size - 1)
        return x.clamp(0, size - 1)
    return x


class _Source:
    """The flattened input ``[N, C, prod(sizes)]`` and a reader of its pixels at integer
    coordinates (float tensors ``[N, P]``, one per spatial dimension, outermost first)."""

    def __init__(self, input, out_points):
        self.n, self.c = input.shape[0], input.shape[1]
        self.sizes = list(input.shape[2:])
        self.flat = input.reshape(self.n, self.c, math.prod(self.sizes))
        self.points = out_points
        strides, s = [], 1
        for size in reversed(self.sizes):
            strides.append(s)
            s *= size
        self.strides = strides[::-1]

    def read(self, coords):
        """The pixels at ``coords`` (exact integers as floats), ``[N, C, P]``; points
        outside the image read 0."""
        valid = None
        index = None
        for x, size, stride in zip(coords, self.sizes, self.strides):
            inside = (x >= 0) & (x <= size - 1)
            valid = inside if valid is None else valid & inside
            # Points outside (NaN and infinite ones too) are masked out; they index pixel 0
            # so that no cast of a NaN or a huge value makes an out-of-range index.
            part = _C.where(inside, x, _C.zeros((), dtype=x.dtype)).long() * stride
            index = part if index is None else index + part
        index = index.unsqueeze(1).expand(self.n, self.c, self.points)
        values = self.flat.gather(2, index)
        return values, valid.unsqueeze(1)


def _cubic_weights(t):
    """The cubic convolution kernel's weights (a = -0.75) of the four taps around a
    point ``t`` past the second one."""
    a = -0.75

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@_autocast_op("grid_sample")
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Samples ``input`` at the points of ``grid``, given in normalised coordinates
    (``-1`` is the left/top/front edge of the image, ``1`` the right/bottom/back edge).
    Differentiable with respect to ``input`` and ``grid``.

    Args:
        input (Tensor): the image, ``(N, C, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``,
            floating point.
        grid (Tensor): the sampling points, ``(N, H_out, W_out, 2)`` or
            ``(N, D_out, H_out, W_out, 3)``, of ``input``'s dtype; ``grid[..., 0]`` is
            the ``x`` (width) coordinate, ``grid[..., 1]`` the ``y`` (height) one and
            ``grid[..., 2]`` the ``z`` (depth) one.
        mode (str): ``'bilinear'`` (trilinear for 5-D input), ``'nearest'`` or
            ``'bicubic'`` (4-D input only). Default: ``'bilinear'``.
        padding_mode (str): what points outside the image read: ``'zeros'`` (0),
            ``'border'`` (the nearest edge pixel) or ``'reflection'`` (the image
            mirrored at its edges). Default: ``'zeros'``.
        align_corners (bool, optional): ``True`` puts ``-1`` and ``1`` at the centres of
            the corner pixels, ``False`` at their outer edges. Default: ``None``, which
            means ``False`` with PyTorch's warning.

    Shape:
        - Input: ``(N, C, H_in, W_in)`` or ``(N, C, D_in, H_in, W_in)``.
        - Grid: ``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``.
        - Output: ``(N, C, H_out, W_out)`` or ``(N, C, D_out, H_out, W_out)``.

    Example::

        >>> x = torch.arange(4.0).reshape(1, 1, 2, 2)
        >>> grid = torch.tensor([[[[0.0, 0.0], [1.0, 1.0]]]])  # the centre, the last pixel
        >>> F.grid_sample(x, grid, align_corners=True)
        tensor([[[[1.5000, 3.0000]]]])
        >>> F.grid_sample(x, grid, mode="nearest", align_corners=True)
        tensor([[[[0., 3.]]]])
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or "
            f"'bicubic', but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
            f"'reflection', but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if _dispatch.is_batched(input, grid):
        from ...func._nn_rules import grid_sample_rule

        kwargs = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        return grid_sample_rule(grid_sample, input, grid, kwargs)
    _check(input, grid, mode)
    wants_graph = _C.is_grad_enabled() and (input.requires_grad or grid.requires_grad)
    if wants_graph or _C._fw_tangent(input) is not None or _C._fw_tangent(grid) is not None:
        return _GridSample.apply(input, grid, mode, padding_mode, align_corners)
    return _C._grid_sample_forward(input, grid, mode, padding_mode, align_corners)


class _GridSample(Function):
    """``grid_sample`` as one node: the native forward and backward, or the composite's
    derivative when a graph of the backward is being built."""

    @staticmethod
    def forward(ctx, input, grid, mode, padding_mode, align_corners):
        ctx.save_for_backward(input, grid)
        ctx.args = (mode, padding_mode, align_corners)
        return _C._grid_sample_forward(input, grid, mode, padding_mode, align_corners)

    @staticmethod
    def backward(ctx, g):
        input, grid = ctx.saved_tensors
        need_input, need_grid = ctx.needs_input_grad[:2]
        if _C.is_grad_enabled():
            # Forward mode asks for the gradients of inputs that have a tangent but do not
            # require grad: differentiate through leaves standing in for them.
            x = input.detach().requires_grad_() if need_input and not input.requires_grad else input
            gr = grid.detach().requires_grad_() if need_grid and not grid.requires_grad else grid
            wrt = [t for t, need in ((x, need_input), (gr, need_grid)) if need]
            got = iter(_autograd_grad(_composite(x, gr, *ctx.args), wrt, g, create_graph=True,
                                      allow_unused=True))
            d_input = next(got) if need_input else None
            d_grid = next(got) if need_grid else None
        else:
            d_input, d_grid = _C._grid_sample_backward(g, input, grid, *ctx.args,
                                                       (need_input, need_grid))
        return d_input, d_grid, None, None, None


def _composite(input, grid, mode, padding_mode, align_corners):
    """``grid_sample`` written in differentiable ops (a graph of the backward
    differentiates this)."""
    d = input.dim() - 2
    n, c = input.shape[0], input.shape[1]
    out_shape = list(grid.shape[1:-1])
    points = math.prod(out_shape)
    g = grid.reshape(n, points, d)
    sizes = list(input.shape[2:])
    src = _Source(input, points)
    # grid[..., k] indexes the k-th spatial dimension counted from the last.
    raw = [_unnormalize(g[:, :, d - 1 - i], sizes[i], align_corners) for i in range(d)]
    if mode == "bicubic":
        out = _bicubic(src, raw, padding_mode, align_corners)
    else:
        coords = [
            _pad_coordinate(x, size, padding_mode, align_corners) for x, size in zip(raw, sizes)
        ]
        if mode == "nearest":
            values, valid = src.read([x.round() for x in coords])
            out = _C.where(valid, values, _C.zeros((), dtype=values.dtype))
        else:
            out = _linear(src, coords)
    return out.reshape(n, c, *out_shape)


def _linear(src, coords):
    """Bi- or trilinear interpolation at ``coords``: each dimension's two taps (index,
    inside the image, weight) computed once and broadcast against the others' into all
    ``2^d`` neighbours of every point, which are then read (one ``gather`` each) and
    summed, the neighbours outside weighted out."""
    n, c, p, d = src.n, src.c, src.points, len(coords)
    zero = _C.zeros((), dtype=coords[0].dtype)
    index = valid = weight = None
    for k, (x, size, stride) in enumerate(zip(coords, src.sizes, src.strides)):
        low = x.floor()
        frac = x - low
        # This dimension's taps (low, low + 1) along their own axis of [N, 2, ..., 2, P].
        shape = [n] + [1] * k + [2] + [1] * (d - 1 - k) + [p]
        taps = _C.stack([low, low + 1], 1)
        inside = ((taps >= 0) & (taps <= size - 1)).reshape(shape)
        # Taps outside (NaN and infinite ones too) are masked out; they index pixel 0 so
        # that no cast of a NaN or a huge value makes an out-of-range index.
        part = (_C.where(inside, taps.reshape(shape), zero).long() * stride)
        w = _C.stack([1 - frac, frac], 1).reshape(shape)
        index = part if index is None else index + part
        valid = inside if valid is None else valid & inside
        weight = w if weight is None else weight * w
    corners = 2**d
    index = index.reshape(n, corners, p)
    valid = valid.reshape(n, 1, corners, p)
    weight = weight.reshape(n, 1, corners, p)
    # One gather per corner (a long gathered row is slower than several short ones).
    out = None
    for k in range(corners):
        values = src.flat.gather(2, index.select(1, k).unsqueeze(1).expand(n, c, p))
        term = _C.where(valid.select(2, k), values * weight.select(2, k), zero)
        out = term if out is None else out + term
    return out


def _bicubic(src, raw, padding_mode, align_corners):
    y, x = raw
    y0, x0 = y.floor(), x.floor()
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    h, w = src.sizes
    out = None
    for i in range(4):
        # Padding applies to each tap's index (an integer), not to the point.
        ty = _pad_coordinate(y0 + (i - 1), h, padding_mode, align_corners)
        row = None
        for j in range(4):
            tx = _pad_coordinate(x0 + (j - 1), w, padding_mode, align_corners)
            # A reflected index may be fractional only in the last bit; it is truncated.
            values, valid = src.read([ty.detach().trunc(), tx.detach().trunc()])
            values = _C.where(valid, values, _C.zeros((), dtype=values.dtype))
            term = values * wx[j].unsqueeze(1)
            row = term if row is None else row + term
        term = row * wy[i].unsqueeze(1)
        out = term if out is None else out + term
    return out


def _base_coordinates(steps, align_corners, dtype):
    """The ``steps`` pixel centres of an axis in [-1, 1] coordinates."""
    if steps <= 1:
        return _C.zeros(max(steps, 1), dtype=dtype)
    a = 1.0 if align_corners else (steps - 1) / steps
    return _C.linspace(-a, a, steps, dtype=dtype)


def affine_grid(theta: Tensor, size: Sequence[int], align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps, for :func:`grid_sample`: each output
    pixel's normalised coordinates ``[x, y, 1]`` (``[x, y, z, 1]`` in 3-D) times
    ``theta``'s transpose. Differentiable with respect to ``theta``.

    Args:
        theta (Tensor): the affine matrices, floating point: ``(N, 2, 3)`` for a 4-D
            ``size``, ``(N, 3, 4)`` for a 5-D one.
        size (sequence of int): the output image's size, ``(N, C, H, W)`` or
            ``(N, C, D, H, W)``.
        align_corners (bool, optional): ``True`` puts ``-1`` and ``1`` at the centres of
            the corner pixels, ``False`` at their outer edges; use the same value in
            :func:`grid_sample`. Default: ``None``, which means ``False`` with PyTorch's
            warning.

    Shape:
        - theta: ``(N, 2, 3)`` or ``(N, 3, 4)``.
        - Output: ``(N, H, W, 2)`` or ``(N, D, H, W, 3)``.

    Example::

        >>> identity = torch.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> F.affine_grid(identity, (1, 1, 2, 2), align_corners=True)
        tensor([[[[-1., -1.],
                  [ 1., -1.]],
        <BLANKLINE>
                 [[-1.,  1.],
                  [ 1.,  1.]]]])
        >>> quarter_turn = torch.tensor([[[0.0, -1.0, 0.0], [1.0, 0.0, 0.0]]])
        >>> x = torch.arange(4.0).reshape(1, 1, 2, 2)
        >>> grid = F.affine_grid(quarter_turn, (1, 1, 2, 2), align_corners=False)
        >>> F.grid_sample(x, grid, align_corners=False)
        tensor([[[[1., 3.],
                  [0., 2.]]]])
    """
    _check_tensor("affine_grid", theta, "theta", None, passes=_dispatch.is_batched)
    try:
        items = list(size)
    except TypeError:
        raise TypeError(
            f"affine_grid(): argument 'size' must be a sequence of ints, not {type(size).__name__}"
        ) from None
    size = []
    for pos, s in enumerate(items):
        try:
            size.append(operator.index(s))
        except TypeError:
            # PyTorch's parser takes ints only: 2.0, inf and NaN are refused, not rounded.
            raise TypeError(
                f"affine_grid(): argument 'size' must be tuple of ints, but found element "
                f"of type {type(s).__name__} at pos {pos}"
            ) from None
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if _dispatch.is_batched(theta):
        from ...func._nn_rules import affine_grid_rule

        return affine_grid_rule(affine_grid, theta, size, align_corners)
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                f"{_size_repr(size)}. Got {theta.shape}."
            )
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                f"{_size_repr(size)}. Got {theta.shape}."
            )
        spatial = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
            f"respectively. Got size {_size_repr(size)}."
        )
    if align_corners and min(spatial) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
            "align_corners=True. This is not an intended use case of affine_grid. See the "
            "documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {_size_repr(size)}")
    n = size[0]
    if theta.shape[0] != n:
        raise RuntimeError(
            f"affine_grid: theta has {theta.shape[0]} matrices but size asks for a batch of {n}"
        )
    d = len(spatial)
    base = _base_grid(tuple(spatial), align_corners, theta.dtype)
    grid = base.matmul(theta.transpose(1, 2))  # [N, P, d]
    return grid.reshape(n, *spatial, d)


# (spatial size, align_corners, dtype) -> the [P, d + 1] base grid of a small output;
# only read (a matmul operand), never handed out.
_BASE_GRIDS: dict = {}


def _base_grid(spatial, align_corners, dtype):
    """Each output pixel's normalised coordinates ``[x, y(, z), 1]``, one row per pixel."""
    key = (spatial, align_corners, dtype)
    base = _BASE_GRIDS.get(key)
    if base is not None:
        return base
    d = len(spatial)
    # x running along the last dimension.
    cols = []
    for k in reversed(range(d)):  # x, y(, z): spatial dimension d-1, d-2, ...
        axis = _base_coordinates(spatial[k], align_corners, dtype)
        shape = [1] * d
        shape[k] = spatial[k]
        cols.append(axis.reshape(shape).expand(*spatial).reshape(-1))
    cols.append(_C.ones(cols[0].shape[0], dtype=dtype))
    base = _C.stack(cols, dim=1)  # [P, d + 1]
    if base.numel() <= 4096:
        if len(_BASE_GRIDS) >= 64:
            _BASE_GRIDS.clear()
        _BASE_GRIDS[key] = base
    return base


def _size_repr(size):
    from ..._size import Size

    return Size(size)
