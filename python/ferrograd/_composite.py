"""Ops composed from differentiable primitives: triangular masks, diagonals,
rolls and splits, grids, products (`kron`, `cross`, `cdist`), the fused
"add a product" family (`addmm`, `addcmul`, ...) and the set/search helpers
(`unique`, `searchsorted`, `bucketize`).

Each is written with ops that record their own backward rules (`masked_fill`,
`narrow`, `cat`, `expand`, `mm`, ...), so first and higher-order gradients
come from those rules; nothing here has a backward of its own. `unique`,
`searchsorted` and `bucketize` return indices or values without gradients,
as in PyTorch, and run through NumPy.
"""

from __future__ import annotations

import builtins
import collections
import functools
import math
import warnings
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from . import _C, _inplace_docs
from ._autocast import autocast_op as _autocast_op
from ._C import Tensor
from ._dispatch import check_tensor
from ._inplace import apply_inplace
from ._methods import attach
from ._replay import data_dependent as _data_dependent
from ._replay import replayed as _replayed

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ._typing import Device, DTypeLike, IntOrInts, Number, TensorOrNumber


__all__ = [
    "addbmm",
    "addcdiv",
    "addcmul",
    "addmm",
    "addmv",
    "addr",
    "baddbmm",
    "bucketize",
    "cartesian_prod",
    "cdist",
    "cross",
    "diag",
    "diag_embed",
    "dsplit",
    "hsplit",
    "kron",
    "lerp",
    "meshgrid",
    "roll",
    "searchsorted",
    "tensor_split",
    "tril",
    "tril_indices",
    "triu",
    "triu_indices",
    "unique",
    "vsplit",
]


def _broadcast_shapes(*shapes):
    from . import broadcast_shapes

    return tuple(broadcast_shapes(*shapes))


# A vmap BatchedTensor passes: these functions are composed of ops with batching rules.
_check = check_tensor


# ----- triangles and diagonals ---------------------------------------------------------


def _tri_mask(t, diagonal, lower):
    rows, cols = t.shape[-2], t.shape[-1]
    # On the input's device: a meta input gets a meta mask.
    r = _C.arange(rows, device=t.device).unsqueeze(1)
    c = _C.arange(cols, device=t.device).unsqueeze(0)
    # Positions to zero: above the chosen diagonal for tril, below it for triu.
    return (c - r > diagonal) if lower else (c - r < diagonal)


def _triangle(name, input, diagonal, lower):
    _check(name, input)
    if input.dim() < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")
    if isinstance(input, Tensor):
        return _C._tril(input, diagonal, lower)
    return input.masked_fill(_tri_mask(input, diagonal, lower), 0)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dimensions (elements on and below
    the ``diagonal``-th diagonal); the rest are zeros."""
    return _triangle("tril", input, diagonal, True)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dimensions (on and above the
    ``diagonal``-th diagonal); the rest are zeros."""
    return _triangle("triu", input, diagonal, False)


def _tri_indices(row, col, offset, lower):
    for name, v in (("row", row), ("col", col), ("offset", offset)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(
                f"tril_indices(): argument '{name}' must be int, not {type(v).__name__}"
            )
    if row < 0:
        raise RuntimeError(f"row must be non-negative, got{row}")
    if col < 0:
        raise RuntimeError(f"col must be non-negative, got{col}")
    if row == 0 or col == 0:
        # No cells, however long the other side: no positions to tabulate.
        return _C.zeros((2, 0), dtype=_C.int64)
    # Refuse before NumPy tries: the mask alone is row * col bytes.
    if row * col > 1 << 31:
        raise RuntimeError(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate "
            f"{2 * 8 * row * col} bytes. Error code 12 (Cannot allocate memory)"
        )
    # A copy (`tensor`), not `from_numpy`: a compiled replay makes it again from the same
    # values, and the caller owns (and may write) what it gets.
    table = _tri_table if row * col <= 1 << 16 else _tri_table.__wrapped__
    return _C.tensor(table(row, col, offset, lower))


@functools.lru_cache(maxsize=32)
def _tri_table(row, col, offset, lower):
    """The 2 x N coordinates as NumPy builds them (several calls); small ones are kept
    per shape, read-only."""
    # Row i keeps the columns [first, first + count): a repeat and a running
    # offset, with no row x col mask to scan (12x faster at 1024 x 1024).
    i = np.arange(row, dtype=np.int64)
    if lower:
        first = np.zeros(row, dtype=np.int64)
        count = np.clip(i + offset + 1, 0, col)
    else:
        first = np.clip(i + offset, 0, col)
        count = col - first
    flat = np.cumsum(count) - count
    cols = np.arange(int(count.sum()), dtype=np.int64) - np.repeat(flat - first, count)
    out = np.stack([np.repeat(i, count), cols])
    out.flags.writeable = False
    return out


def tril_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
) -> Tensor:
    """The 2 x N coordinates of the lower triangle of a ``row`` x ``col`` matrix."""
    out = _tri_indices(row, col, offset, True)
    return out if dtype is None else out.to(dtype)


def triu_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: DTypeLike | None = None,
    device: Device = None,
) -> Tensor:
    """The 2 x N coordinates of the upper triangle of a ``row`` x ``col`` matrix."""
    out = _tri_indices(row, col, offset, False)
    return out if dtype is None else out.to(dtype)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-D input becomes a square matrix with it on the ``diagonal``-th
    diagonal; a 2-D input gives that diagonal as a vector."""
    _check("diag", input)
    if input.dim() == 2:
        return _C.diagonal(input, diagonal)
    if input.dim() != 1:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{input.dim()}D")
    if isinstance(input, Tensor):
        return _C._diag_embed(input, diagonal, 0, 1)
    n = input.shape[0]
    k = abs(diagonal)
    size = n + k
    pad = _C.zeros(k, dtype=input.dtype)
    padded = _C.cat([input, pad]) if k else input
    # Row i holds v[i] when the diagonal is above the main one, column j v[j] below it.
    vals = (
        padded.unsqueeze(1).expand(size, size)
        if diagonal >= 0
        else padded.unsqueeze(0).expand(size, size)
    )
    r = _C.arange(size).unsqueeze(1)
    c = _C.arange(size).unsqueeze(0)
    return vals.masked_fill((c - r) != diagonal, 0)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Batches of diagonal matrices whose ``offset``-th diagonals (in the planes
    ``dim1``, ``dim2`` of the result) are the last dimension of ``input``."""
    _check("diag_embed", input)
    n = input.shape[-1]
    size = n + abs(offset)
    nd = input.dim() + 1
    d1, d2 = dim1 % nd, dim2 % nd
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if isinstance(input, Tensor):
        return _C._diag_embed(input, offset, d1, d2)
    batch = tuple(input.shape[:-1])
    if offset:
        zeros = _C.zeros(*batch, abs(offset), dtype=input.dtype)
        padded = _C.cat([input, zeros], -1)
    else:
        padded = input
    if offset >= 0:
        vals = padded.unsqueeze(-1).expand(*batch, size, size)
    else:
        vals = padded.unsqueeze(-2).expand(*batch, size, size)
    r = _C.arange(size).unsqueeze(1)
    c = _C.arange(size).unsqueeze(0)
    out = vals.masked_fill((c - r) != offset, 0)
    # The matrix planes are the last two dims; move them to (d1, d2).
    rest = [i for i in range(nd) if i not in (d1, d2)]
    perm = [0] * nd
    for src, dst in zip(range(nd - 2), rest):
        perm[dst] = src
    perm[d1], perm[d2] = nd - 2, nd - 1
    return out.permute(*perm)


# ----- rolls and splits ----------------------------------------------------------------


def roll(input: Tensor, shifts: IntOrInts, dims: IntOrInts | None = None) -> Tensor:
    """Rotates the elements along ``dims`` by ``shifts`` places (elements
    pushed off one end come back at the other); with no ``dims`` the tensor is
    rolled as if flattened."""
    _check("roll", input)
    if isinstance(shifts, int):
        shifts = (shifts,)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return roll(input.flatten(), shifts[0], 0).view(tuple(input.shape))
    if isinstance(dims, int):
        dims = (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    if isinstance(input, Tensor):
        return _C._roll(input, list(shifts), list(dims))
    out = input
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        out = _C.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out


def tensor_split(
    input: Tensor,
    indices_or_sections: int | Sequence[int] | Tensor,
    dim: int = 0,
) -> tuple[Tensor, ...]:
    """Splits ``input`` along ``dim`` into views: into ``n`` nearly equal
    parts (the first ``size % n`` one longer), or at the given indices."""
    _check("tensor_split", input)
    if input.dim() == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    size = input.shape[dim]
    if isinstance(indices_or_sections, Tensor):
        if indices_or_sections.dim() == 0:
            indices_or_sections = int(indices_or_sections.item())
        else:
            indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        # One view per section: a count no list can hold (2**40) is refused at
        # once (MemoryError) instead of after a loop that fills memory.
        bounds = [None] * n
        start = 0
        for i in range(n):
            length = base + (1 if i < extra else 0)
            bounds[i] = (start, length)
            start += length
    else:
        points = [0, *[int(i) for i in indices_or_sections], size]
        bounds = []
        for a, b in zip(points, points[1:]):
            a = builtins.min(builtins.max(a if a >= 0 else a + size, 0), size)
            b = builtins.min(builtins.max(b if b >= 0 else b + size, 0), size)
            bounds.append((a, builtins.max(b - a, 0)))
    return tuple(input.narrow(dim, a, n) for a, n in bounds)


def _split_dim(fn, input, sections, dim, min_dims):
    _check(fn, input)
    if input.dim() < min_dims:
        raise RuntimeError(
            f"torch.{fn} requires a tensor with at least {min_dims} dimension, "
            f"but got a tensor with {input.dim()} dimensions!"
        )
    if isinstance(sections, int) and sections != 0 and input.shape[dim] % sections != 0:
        raise RuntimeError(
            f"torch.{fn} attempted to split along dimension {dim}, but the size of the "
            f"dimension {input.shape[dim]} is not divisible by the split_size {sections}!"
        )
    return tensor_split(input, sections, dim)


def hsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Splits along the columns (dim 1, or dim 0 of a 1-D tensor)."""
    _check("hsplit", input)
    return _split_dim("hsplit", input, indices_or_sections, 1 if input.dim() > 1 else 0, 1)


def vsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Splits along the rows (dim 0) of a tensor of two or more dimensions."""
    return _split_dim("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: Tensor, indices_or_sections: int | Sequence[int]) -> tuple[Tensor, ...]:
    """Splits along the depth (dim 2) of a tensor of three or more dimensions."""
    return _split_dim("dsplit", input, indices_or_sections, 2, 3)


# ----- grids ---------------------------------------------------------------------------


def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids from 1-D tensors: ``indexing='ij'`` (matrix, the
    default) or ``'xy'`` (Cartesian: the first two dimensions swapped)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        _check("meshgrid", t, "tensors")
        if t.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}"
            )
    if indexing is None:
        warnings.warn(
            "torch.meshgrid: in an upcoming release, it will be required to pass the "
            "indexing argument.",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    ts = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    n = len(ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * n
        view[i] = shape[i]
        out.append(t.view(tuple(view)).expand(*shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-D tensor, one per row."""
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


# ----- products ------------------------------------------------------------------------


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: blocks ``input[i, j] * other`` laid out in a grid."""
    _check("kron", input)
    _check("kron", other, "other", 2)
    nd = builtins.max(input.dim(), other.dim())
    a_shape = (1,) * (nd - input.dim()) + tuple(input.shape)
    b_shape = (1,) * (nd - other.dim()) + tuple(other.shape)
    a_view, b_view, out = [], [], []
    for sa, sb in zip(a_shape, b_shape):
        a_view += [sa, 1]
        b_view += [1, sb]
        out.append(sa * sb)
    # Straight to the interleaved views: no reshape to the common rank first.
    return (input.reshape(tuple(a_view)) * other.reshape(tuple(b_view))).reshape(tuple(out))


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (the first dimension of
    size 3 when not given, as PyTorch's ``torch.cross``)."""
    _check("cross", input)
    _check("cross", other, "other", 2)
    if dim is None:
        shape = _broadcast_shapes(tuple(input.shape), tuple(other.shape))
        dims3 = [i for i, s in enumerate(shape) if s == 3]
        if not dims3:
            raise RuntimeError("no dimension of size 3 in input")
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.",
            UserWarning,
            stacklevel=2,
        )
        dim = dims3[0]
    # expand rather than broadcast_tensors, which has no batching rule.
    a, b = input, other
    if input.shape != other.shape:
        shape = _broadcast_shapes(tuple(input.shape), tuple(other.shape))
        a, b = input.expand(*shape), other.expand(*shape)
    if a.shape[dim] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got "
            f"{input.shape[dim] if input.dim() else 0} and {other.shape[dim] if other.dim() else 0}"
        )
    if a.numel() <= 1 << 12:
        # Component i is a[i+1] * b[i+2] - a[i+2] * b[i+1] (indices mod 3): four
        # gathers of the rotated components, two products and a difference, fewer
        # calls than the slices below (whose narrow views are the cheaper reads on many).
        next1, next2 = _CROSS_ROTATIONS
        return a.index_select(dim, next1) * b.index_select(dim, next2) - a.index_select(
            dim, next2
        ) * b.index_select(dim, next1)
    a0, a1, a2 = (a.narrow(dim, i, 1) for i in range(3))
    b0, b1, b2 = (b.narrow(dim, i, 1) for i in range(3))
    return _C.cat([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


# The components 1, 2, 0 and 2, 0, 1: a vector's entries rotated by one and by two.
_CROSS_ROTATIONS = (_C.tensor([1, 2, 0]), _C.tensor([2, 0, 1]))


@_autocast_op("cdist")
def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (``B x P x M``)
    and ``x2`` (``B x R x M``): a ``B x P x R`` tensor, ``B`` any batch dimensions."""
    _check("cdist", x1, "x1")
    _check("cdist", x2, "x2", 2)
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(
            f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D"
            if x1.dim() < 2
            else f"cdist only supports at least 2D tensors, X2 got: {x2.dim()}D"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
             "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    if p == 2 and (compute_mode == modes[1] or (compute_mode == modes[0] and max(rows1, rows2) > 25)):
        return _euclidean_dist(x1, x2)
    # The norm's own gradient rule gives PyTorch's zero gradient at zero distance.
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, -1)


def _euclidean_dist(x1: Tensor, x2: Tensor) -> Tensor:
    """Euclidean distances as PyTorch computes them for more than 25 rows: one
    matrix product of ``[-2 x1, |x1|^2, 1]`` and ``[x2, 1, |x2|^2]``, clamped at
    zero, then the square root (no ``P x R x M`` difference tensor: 100x
    faster at 1024 x 64 rows; close points lose digits to cancellation, as in
    PyTorch)."""
    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    a = _C.cat([x1.mul(-2), n1, n1.new_ones(n1.shape)], -1)
    b = _C.cat([x2, n2.new_ones(n2.shape), n2], -1)
    return a.matmul(b.transpose(-1, -2)).clamp_min(0).sqrt()


def _fusable(*args: object) -> bool:
    """Whether the one-pass kernel of ``lerp``/``addcmul``/``addcdiv`` takes
    these arguments: ferrograd tensors of one dtype, float32 or float64, and
    plain numbers (a bool, or any promotion, takes the composition)."""
    dt = None
    for a in args:
        if isinstance(a, Tensor):
            if dt is None:
                dt = a.dtype
            if a.dtype != dt:
                return False
        elif type(a) not in (int, float) or (type(a) is int and abs(a) > 2**53):
            return False
    return dt in (_C.float32, _C.float64)


def lerp(input: Tensor, end: Tensor, weight: TensorOrNumber) -> Tensor:
    """``input + weight * (end - input)``: linear interpolation.

    As PyTorch computes it, from the nearer end: ``input + weight * (end - input)``
    for ``|weight| < 0.5``, ``end - (end - input) * (1 - weight)`` otherwise, so
    ``weight`` 0 gives ``input`` and 1 gives ``end`` exactly."""
    _check("lerp", input)
    _check("lerp", end, "end", 2)
    if _fusable(input, end, weight):
        return _C._lerp(input, end, weight)
    diff = end - input
    if isinstance(weight, (int, float, np.integer, np.floating)):
        one_minus = 1 - weight
        if diff.dtype != _C.float64 and diff.is_floating_point():
            # The weight is a float32 number for float32 and narrower tensors, as in PyTorch.
            one_minus = float(np.float32(1) - np.float32(weight))
        if abs(weight) < 0.5:
            return input + weight * diff
        return end - diff * one_minus
    _check("lerp", weight, "weight", 3)
    return _C.where(weight.abs() < 0.5, input + weight * diff, end - diff * (1 - weight))


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    _check("addcmul", input)
    _check("addcmul", tensor1, "tensor1", 2)
    _check("addcmul", tensor2, "tensor2", 3)
    if _fusable(input, tensor1, tensor2, value):
        return _C._addc(input, tensor1, tensor2, float(value), False)
    prod = tensor1 * tensor2
    return input + (prod if value == 1 else value * prod)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Number = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``."""
    _check("addcdiv", input)
    _check("addcdiv", tensor1, "tensor1", 2)
    _check("addcdiv", tensor2, "tensor2", 3)
    if not tensor1.is_floating_point() and not tensor2.is_floating_point():
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic "
            "addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / "
            "tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / "
            "tensor2) for float inputs. The future addcdiv behavior is just the latter "
            "implementation: (input + value * tensor1 / tensor2), for all dtypes."
        )
    if _fusable(input, tensor1, tensor2, value):
        return _C._addc(input, tensor1, tensor2, float(value), True)
    quot = tensor1 / tensor2
    return input + (quot if value == 1 else value * quot)


def _scaled_sum(input, product, beta, alpha):
    # beta == 0 ignores input entirely (NaN and inf in it do not propagate), as PyTorch.
    scaled = product if alpha == 1 else alpha * product
    if beta == 0:
        shape = _broadcast_shapes(tuple(input.shape), tuple(scaled.shape))
        return scaled + _C.zeros(shape, dtype=scaled.dtype)
    return (input if beta == 1 else beta * input) + scaled


@_autocast_op("addmm")
def addmm(
    input: Tensor,
    mat1: Tensor,
    mat2: Tensor,
    *,
    beta: Number = 1,
    alpha: Number = 1,
) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``."""
    _check("addmm", input)
    _check("addmm", mat1, "mat1", 2)
    _check("addmm", mat2, "mat2", 3)
    if all(isinstance(t, _C.Tensor) for t in (input, mat1, mat2)):
        # One node (AddmmBackward0); float32 sums start from the bias and are rounded once.
        return _C._addmm(input, mat1, mat2, beta, alpha)
    # vmap's, meta and tracing values: their product's rule, then the scaled sum.
    return _scaled_sum(input, mat1.matmul(mat2), beta, alpha)


def addmv(
    input: Tensor,
    mat: Tensor,
    vec: Tensor,
    *,
    beta: Number = 1,
    alpha: Number = 1,
) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    _check("addmv", input)
    return _scaled_sum(input, _C.mv(mat, vec), beta, alpha)


def addr(
    input: Tensor,
    vec1: Tensor,
    vec2: Tensor,
    *,
    beta: Number = 1,
    alpha: Number = 1,
) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    _check("addr", input)
    return _scaled_sum(input, _C.outer(vec1, vec2), beta, alpha)


@_autocast_op("baddbmm")
def baddbmm(
    input: Tensor,
    batch1: Tensor,
    batch2: Tensor,
    *,
    beta: Number = 1,
    alpha: Number = 1,
) -> Tensor:
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices."""
    _check("baddbmm", input)
    return _scaled_sum(input, _C.bmm(batch1, batch2), beta, alpha)


@_autocast_op("addbmm")
def addbmm(
    input: Tensor,
    batch1: Tensor,
    batch2: Tensor,
    *,
    beta: Number = 1,
    alpha: Number = 1,
) -> Tensor:
    """``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    _check("addbmm", input)
    return _scaled_sum(input, _C.bmm(batch1, batch2).sum(0), beta, alpha)


# ----- sets and searches ---------------------------------------------------------------


# `np.unique` merges NaNs unless told not to (NumPy 1.24 added the option).
_NAN_DISTINCT = (
    {"equal_nan": False}
    if tuple(int(p) for p in np.__version__.split(".")[:2]) >= (1, 24)
    else {}
)


@overload
def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: Literal[False] = False,
    return_counts: Literal[False] = False,
    dim: int | None = None,
) -> Tensor: ...
@overload
def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]: ...
@_data_dependent("unique")
def unique(  # noqa: A002
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements (or slices along ``dim``) of ``input``, sorted;
    optionally where each element went (``return_inverse``) and how many
    times each occurs (``return_counts``). Not differentiable."""
    _check("unique", input)
    if (dim is None and input.dim() and input.numel() <= 64 and not input.is_floating_point()
            and not input.is_complex()):
        return _unique_small(input, return_inverse, return_counts)
    arr = input.detach().numpy()
    if dim is None:
        # Every NaN is its own value, as in PyTorch (NaN == NaN is false).
        values, inverse, counts = np.unique(
            arr, return_inverse=True, return_counts=True, **_NAN_DISTINCT
        )
        inverse = inverse.reshape(arr.shape)
    else:
        values, inverse, counts = np.unique(arr, return_inverse=True, return_counts=True, axis=dim)
        inverse = inverse.reshape(-1)
    out = _C.tensor(values, dtype=input.dtype)
    extra = []
    if return_inverse:
        extra.append(_C.from_numpy(np.ascontiguousarray(inverse.astype(np.int64))))
    if return_counts:
        extra.append(_C.from_numpy(counts.astype(np.int64)))
    return (out, *extra) if extra else out


def _unique_small(input, return_inverse, return_counts):
    """``unique`` of a few integers (or bools) on Python lists: np.unique's sort and
    bookkeeping cost tens of microseconds on a handful of elements."""
    items = input.detach().reshape(-1).tolist()
    values = sorted(set(items))
    out = _C.tensor(values, dtype=input.dtype)
    extra = []
    if return_inverse:
        where = {v: i for i, v in enumerate(values)}
        inverse = _C.from_numpy(np.array([where[v] for v in items], dtype=np.int64))
        extra.append(inverse.reshape(tuple(input.shape)))
    if return_counts:
        counts = collections.Counter(items)
        extra.append(_C.from_numpy(np.array([counts[v] for v in values], dtype=np.int64)))
    return (out, *extra) if extra else out


@_replayed("searchsorted")
def searchsorted(
    sorted_sequence: Tensor,
    input: TensorOrNumber,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """Where each value of ``input`` would be inserted into the last dimension
    of ``sorted_sequence`` to keep it sorted (``right``/``side='right'``: after
    equal elements)."""
    _check("searchsorted", sorted_sequence, "sorted_sequence")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    if not isinstance(input, (Tensor, int, float)):
        raise TypeError(
            f"searchsorted(): argument 'input' (position 2) must be Tensor, not {type(input).__name__}"
        )
    if sorter is not None:
        _check("searchsorted", sorter, "sorter")
    elif isinstance(input, Tensor) and _native_search(sorted_sequence, input):
        return _C._searchsorted(sorted_sequence, input, bool(right), bool(out_int32))
    seq = sorted_sequence.detach().numpy()
    scalar = not isinstance(input, Tensor)
    vals = np.asarray(input) if scalar else input.detach().numpy()
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter.numpy(), -1)
    if seq.ndim == 1:
        res = _binary_search(seq, vals, right)
    else:
        if seq.shape[:-1] != vals.shape[:-1]:
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                "dimensions of boundaries tensor and input value tensor must match, but we got "
                f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}"
            )
        flat_seq = seq.reshape(math.prod(seq.shape[:-1]), seq.shape[-1])
        flat_vals = vals.reshape(flat_seq.shape[0], vals.shape[-1])
        res = _binary_search(flat_seq, flat_vals, right).reshape(vals.shape)
    res = np.asarray(res, dtype=np.int32 if out_int32 else np.int64)
    return _C.tensor(res) if res.ndim == 0 else _C.from_numpy(np.ascontiguousarray(res))


# The dtypes the native bisection takes (a sequence and values of one dtype).
_SEARCH_DTYPES = frozenset((_C.float32, _C.float64, _C.int64, _C.int32, _C.int16, _C.int8, _C.uint8))


def _native_search(seq, vals):
    """Whether the native bisection answers: one dtype it takes, a sequence of at
    least one dimension, and (for a batched sequence) the values' leading
    dimensions its own, else the refusal below with PyTorch's words."""
    if seq.dtype != vals.dtype or seq.dtype not in _SEARCH_DTYPES or seq.dim() == 0:
        return False
    if seq.dim() > 1 and tuple(seq.shape[:-1]) != tuple(vals.shape[:-1]):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(vals.shape)}"
        )
    return True


def _binary_search(seq, vals, right):
    """PyTorch's searchsorted: for each value, the bisection that moves right
    while ``not (seq[mid] >= v)`` (``not (seq[mid] > v)`` with ``right``).

    On a sequence sorted with NaNs last this is the insertion point; NaNs (in
    either argument) compare false, so they steer the bisection exactly as in
    PyTorch, where NumPy's ``searchsorted`` orders NaN above everything.
    ``seq`` is 1-D, or 2-D with one row per row of ``vals``."""
    vals = np.asarray(vals)
    n = seq.shape[-1]
    if vals.size * n.bit_length() <= 256 and (
        seq.dtype == vals.dtype or (seq.dtype.kind == "f" and vals.dtype.kind == "f")
    ):
        # A few values: the bisection in Python on the elements as Python numbers
        # (compared exactly, as NumPy compares one dtype or two float dtypes) costs
        # less than a dozen array calls, sorted sequence or not.
        return _bisect_lists(seq, vals, right)
    if (
        seq.ndim == 1
        and seq.dtype.kind in "biuf"
        and vals.dtype.kind in "biuf"
        and not np.isnan(seq[-1:]).any()
        and bool((seq[:-1] <= seq[1:]).all())
    ):
        # Sorted without NaN: the insertion point is the only answer, NumPy's too
        # (a NaN value goes to the end in both), in one native call.
        return np.searchsorted(seq, vals, "right" if right else "left")
    lo = np.zeros(vals.shape, dtype=np.int64)
    if n == 0:
        return lo
    # Each value's window [lo, lo + size) shrinks to at most size // 2 a step, so
    # n.bit_length() steps finish every bisection; an empty window stays put.
    size = np.full(vals.shape, n, dtype=np.int64)
    # One element past the end, read (and ignored) by an empty window at lo == n.
    seq = np.concatenate([seq, seq[..., -1:]], -1)
    rows = None if seq.ndim == 1 else np.arange(seq.shape[0]).reshape(-1, 1)
    stops = np.greater if right else np.greater_equal
    for _ in range(n.bit_length()):
        half = size >> 1
        mid = lo + half
        # Right while the window is open and not seq[mid] >= v (> v with right).
        go = np.greater(size > 0, stops(seq[mid] if rows is None else seq[rows, mid], vals))
        lo = np.where(go, mid + 1, lo)
        size = np.where(go, size - half - 1, half)
    return lo


def _bisect_lists(seq, vals, right):
    """``_binary_search`` one value at a time on Python lists."""
    n = seq.shape[-1]
    flat = vals.reshape(-1).tolist()
    if n == 0 or not flat:
        return np.zeros(vals.shape, dtype=np.int64)
    rows = seq.reshape(-1, n).tolist()
    per_row = vals.shape[-1] if seq.ndim > 1 else len(flat)
    out = []
    for k, v in enumerate(flat):
        row = rows[k // per_row]
        lo, size = 0, n
        while size > 0:
            half = size >> 1
            mid = lo + half
            # Right unless row[mid] >= v (> v with right); a NaN compares false.
            if (row[mid] > v) if right else (row[mid] >= v):
                size = half
            else:
                lo, size = mid + 1, size - half - 1
        out.append(lo)
    return np.array(out, dtype=np.int64).reshape(vals.shape)


@_replayed("bucketize")
def bucketize(
    input: TensorOrNumber,
    boundaries: Tensor,
    *,
    out_int32: bool = False,
    right: bool = False,
) -> Tensor:
    """The bucket of each element of ``input`` between ``boundaries`` (1-D,
    increasing): ``i`` with ``boundaries[i-1] < x <= boundaries[i]``, or
    ``boundaries[i-1] <= x < boundaries[i]`` with ``right=True``."""
    _check("bucketize", boundaries, "boundaries", 2)
    if not isinstance(input, (Tensor, int, float)):
        raise TypeError(
            f"bucketize(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    if boundaries.dim() != 1:
        raise RuntimeError(
            f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})"
        )
    if isinstance(input, Tensor) and _native_search(boundaries, input):
        return _C._searchsorted(boundaries, input, bool(right), bool(out_int32))
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ----- Tensor methods ------------------------------------------------------------------


def _inplace(name, fn, direct=False):
    def method(self, *args, **kwargs):
        return apply_inplace(self, lambda: fn(self, *args, **kwargs), name, direct=direct)

    method.__name__ = name
    return _inplace_docs.document(method, name, fn, fn.__doc__)


def _install_methods():
    for fn in (
        tril,
        triu,
        diag,
        diag_embed,
        roll,
        tensor_split,
        hsplit,
        vsplit,
        dsplit,
        kron,
        cross,
        lerp,
        addcmul,
        addcdiv,
        addmm,
        addmv,
        addr,
        baddbmm,
        addbmm,
        unique,
    ):
        attach({fn.__name__: fn}, __name__)
    for fn in (tril, triu, lerp, addcmul, addcdiv, addmm, addmv, addr, baddbmm, addbmm):
        name = fn.__name__ + "_"
        if not hasattr(Tensor, name):
            # Written over self's memory when nothing records (tril_/triu_ zero the
            # other triangle; lerp_/addcmul_/addcdiv_ with operands laid out as self).
            direct = fn in (tril, triu, lerp, addcmul, addcdiv)
            attach({name: _inplace(name, fn, direct=direct)}, __name__)


_install_methods()
