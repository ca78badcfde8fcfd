"""Scans (``cumprod``, ``cummax``/``cummin``, ``logcumsumexp``) and shape
helpers (``diff``, ``tile``, ``repeat_interleave``, ``rot90``, the ``*stack``
family, ...)."""

from __future__ import annotations

import builtins
import collections
from typing import TYPE_CHECKING

import numpy as np

from .. import _C, _dispatch
from .._C import Tensor
from .._replay import replayed as _replayed
from ._common import _alloc_guard, _check, _from_np, _np, _vmap_level, _wrap_dim

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .._typing import DTypeLike, IntOrInts


# ----- scans ---------------------------------------------------------------------------


def _shift(x, dim, k, fill):
    n = x.shape[dim]
    k = builtins.min(k, n)
    shape = list(x.shape)
    shape[dim] = k
    pad = _C.full(tuple(shape), fill, dtype=x.dtype)
    return _C.cat([pad, x.narrow(dim, 0, n - k)], dim)


def cumprod(input: Tensor, dim: int, *, dtype: DTypeLike | None = None) -> Tensor:
    """The cumulative product along ``dim``: a sequential Rust scan, whose backward
    is a reversed linear scan (exact where inputs are zero, no division). Batched
    (vmapped) inputs take a log-depth scan of multiplications."""
    _check("cumprod", input)
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype == _C.bool:
        input = input.long()
    if input.dim() == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.dim())
    if isinstance(input, Tensor):
        return _C._cumprod(input, dim)
    out = input
    k = 1
    while k < input.shape[dim]:
        out = out * _shift(out, dim, k, 1)
        k *= 2
    return out if out is not input else input.clone()


_MinMax = collections.namedtuple("_MinMax", ["values", "indices"])


def _cum_ext(fn, input, dim, better):
    _check(fn, input)
    lid, b = _vmap_level(input)
    if lid:
        # The scan runs in NumPy, so under vmap it runs once on the physical
        # value with the batch dimension in front.
        if input.dim() == 0:
            size = input._value.shape[0]
            return _MinMax(input.clone(), b.wrap(_C.zeros(size, dtype=_C.int64), lid))
        res = _cum_ext(fn, input._value, _wrap_dim(dim, input.dim()) + 1, better)
        return _MinMax(b.wrap(res.values, lid), b.wrap(res.indices, lid))
    if input.dim() == 0:
        return _MinMax(input.clone(), _C.zeros((), dtype=_C.int64))
    dim = _wrap_dim(dim, input.dim())
    if isinstance(input, Tensor):
        return _MinMax(*_C._cum_extreme(input, dim, better is np.maximum))
    if input.numel() == 0:
        # Nothing to scan; NumPy would refuse the shape of `empty(2**62, 0)`.
        indices = _C.zeros(tuple(input.shape), dtype=_C.int64)
        return _MinMax(input.gather(dim, indices), indices)
    arr = np.moveaxis(_np(input), dim, -1)
    # The running extreme, then for each position the last index where the element
    # equals it (ties move the index forward, as PyTorch's scan does); NaN wins and
    # stays, so every NaN moves the index too.
    acc = better.accumulate(arr, axis=-1)
    hit = arr == acc
    if arr.dtype.kind == "f":
        hit |= np.isnan(arr)
    pos = np.arange(arr.shape[-1], dtype=np.int64)
    idx = (
        np.maximum.accumulate(np.where(hit, pos, 0), axis=-1)
        if arr.shape[-1]
        else np.zeros(arr.shape, dtype=np.int64)
    )
    indices = _from_np(np.moveaxis(idx, -1, dim))
    return _MinMax(input.gather(dim, indices), indices)


@_replayed("cummax")
def cummax(input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """The running maximum along ``dim`` and where it was found, as
    ``(values, indices)``; the gradient flows to the element each value came from."""
    return _cum_ext("cummax", input, dim, np.maximum)


@_replayed("cummin")
def cummin(input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """The running minimum along ``dim`` and where it was found, as
    ``(values, indices)``; the gradient flows to the element each value came from."""
    return _cum_ext("cummin", input, dim, np.minimum)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along ``dim``, computed after subtracting the
    maximum so large values do not overflow."""
    _check("logcumsumexp", input)
    if not input.is_floating_point():
        raise RuntimeError(
            f"\"logcumsumexp_out_cpu\" not implemented for '{str(input.dtype).split('.')[-1].capitalize()}'"
        )
    if input.dim() == 0:
        return input.clone()
    dim = _wrap_dim(dim, input.dim())
    if input.shape[dim] == 0:
        return input.clone()
    # The shift: each slice's maximum, 0 where that is not finite (one call, not three).
    m = input.detach().amax(dim, keepdim=True).nan_to_num(0.0, 0.0, 0.0)
    return (input - m).exp().cumsum(dim).log() + m


# ----- shape helpers -------------------------------------------------------------------


def diff(
    input: Tensor,
    n: int = 1,
    dim: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``out[i] = input[i+1] - input[i]``),
    after joining ``prepend`` and ``append``; logical XOR for bool tensors."""
    _check("diff", input)
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    dim = _wrap_dim(dim, input.dim())
    parts = [p for p in (prepend, input, append) if p is not None]
    if len(parts) > 1:
        fixed = []
        for p in parts:
            # A vmap BatchedTensor is a tensor here too.
            tensorlike = isinstance(p, Tensor) or hasattr(type(p), "__ferrograd_function__")
            if not tensorlike or p.dim() == 0:
                shape = list(input.shape)
                shape[dim] = 1
                # A 0-d tensor is expanded, not read out, so its gradient flows.
                p = (p.to(input.dtype).expand(*shape) if tensorlike
                     else _C.full(tuple(shape), p, dtype=input.dtype))  # fmt: skip
            fixed.append(p)
        input = _C.cat(fixed, dim)
    if input.numel() == 0:
        # No values to difference, only a length to shorten: stepping an empty
        # 2**62-long dimension down one at a time would never end.
        return input.narrow(dim, 0, builtins.max(input.shape[dim] - n, 0))
    out = input
    for _ in range(n):
        length = out.shape[dim]
        if length == 0:
            break
        hi, lo = out.narrow(dim, 1, length - 1), out.narrow(dim, 0, length - 1)
        out = hi.logical_xor(lo) if out.dtype == _C.bool else hi - lo
    return out


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input`` repeated ``dims[i]`` times along each dimension; ``dims`` shorter than
    the number of dimensions is padded with leading ones."""
    _check("tile", input)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    dims = (1,) * (input.dim() - len(dims)) + dims
    return input.repeat(*dims)


def _repeats_from_values(input, repeats=None, dim=None, *, output_size=None):
    return output_size is None and (repeats is None or isinstance(repeats, Tensor))


@_replayed("repeat_interleave", data_dependent_if=_repeats_from_values)
def repeat_interleave(
    input: Tensor,
    repeats: Tensor | int | None = None,
    dim: int | None = None,
    *,
    output_size: int | None = None,
) -> Tensor:
    """Each element (or slice along ``dim``) of ``input`` repeated ``repeats`` times
    in place. With a single int64 tensor, the indices ``i`` repeated ``input[i]`` times."""
    if repeats is None:
        _check("repeat_interleave", input, "repeats")
        if input.dim() != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        if input.dtype != _C.int64:
            raise RuntimeError("repeats has to be Long tensor")
        counts = _np(input)
        if (counts < 0).any():
            raise RuntimeError("repeats can not be negative")
        _alloc_guard(8 * int(counts.sum()))
        return _from_np(np.repeat(np.arange(len(counts), dtype=np.int64), counts))
    _check("repeat_interleave", input)
    if dim is None:
        input = input.reshape(-1)
        dim = 0
    dim = _wrap_dim(dim, input.dim())
    if input.dim() == 0:
        input = input.reshape(1)
    n = input.shape[dim]
    if isinstance(repeats, Tensor):
        if repeats.dim() > 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        reps = _np(repeats).reshape(-1).astype(np.int64)
        if reps.size == 1:
            reps = np.full(n, reps[0])
        elif reps.size != n:
            raise RuntimeError("repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {reps.size} and input.size({dim}) = {n}")  # fmt: skip
    else:
        r = int(repeats)
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        _alloc_guard(8 * n * r * builtins.max(input.numel() // builtins.max(n, 1), 1))
        if output_size is not None and output_size != n * r:
            raise RuntimeError("allocated size does not match required size")
        # One count for every slice: the index 0, 0, 1, 1, ... as an expanded arange,
        # with no NumPy pass.
        idx = _C.arange(n).unsqueeze(1).expand(n, r).reshape(-1)
        return input.index_select(dim, idx)
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    _alloc_guard(8 * int(reps.sum()) * builtins.max(input.numel() // builtins.max(n, 1), 1))
    idx = np.repeat(np.arange(n, dtype=np.int64), reps)
    if output_size is not None and output_size != idx.size:
        raise RuntimeError("allocated size does not match required size")
    return input.index_select(dim, _from_np(idx))


def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """``input`` rotated by 90 degrees ``k`` times in the plane ``dims``, from the first
    axis towards the second."""
    _check("rot90", input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.dim() < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.dim()}")
    d0, d1 = _wrap_dim(dims[0], input.dim()), _wrap_dim(dims[1], input.dim())
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip(d0, d1)
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def fliplr(input: Tensor) -> Tensor:
    """``input`` with its columns (dim 1) in reverse order."""
    _check("fliplr", input)
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input: Tensor) -> Tensor:
    """``input`` with its rows (dim 0) in reverse order."""
    _check("flipud", input)
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def ravel(input: Tensor) -> Tensor:
    """``input`` flattened to 1-D (a view when possible)."""
    _check("ravel", input)
    return input.reshape(-1)


def moveaxis(input: Tensor, source: IntOrInts, destination: IntOrInts) -> Tensor:
    """Alias of ``movedim``."""
    _check("moveaxis", input)
    return input.movedim(source, destination)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose``."""
    _check("swapdims", input)
    return input.transpose(dim0, dim1)


def argwhere(input: Tensor) -> Tensor:
    """The coordinates of the nonzero elements of ``input``, one row each."""
    if _dispatch.is_batched(input):
        # vmap refuses it by this name (its stated reason), not as Tensor.nonzero.
        return _dispatch.dispatch(argwhere, (input,))
    _check("argwhere", input)
    return input.nonzero()


def _atleast(n, tensors):
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    out = []
    for t in tensors:
        _check(f"atleast_{n}d", t, "tensors")
        if t.dim() >= n:
            out.append(t)
        elif t.dim() == 0:
            out.append(t.reshape((1,) * n))
        elif n == 3:
            out.append(t.reshape(1, -1, 1) if t.dim() == 1 else t.unsqueeze(-1))
        else:
            out.append(t.unsqueeze(0))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dimension (0-d becomes shape ``(1,)``)."""
    return _atleast(1, tensors)


def atleast_2d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dimensions (leading ones added)."""
    return _atleast(2, tensors)


def atleast_3d(*tensors: Tensor | Sequence[Tensor]) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least three dimensions: ``(n,)`` becomes ``(1, n, 1)`` and
    ``(m, n)`` becomes ``(m, n, 1)``, as NumPy's."""
    return _atleast(3, tensors)


def _seq(fn, tensors):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{fn}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not {type(tensors).__name__}")  # fmt: skip
    if not tensors:
        raise RuntimeError(f"{fn} expects a non-empty TensorList")
    return list(tensors)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins ``tensors`` column-wise: along dim 0 for 1-D tensors, else dim 1."""
    ts = _atleast(1, (_seq("hstack", tensors),))
    return _C.cat(list(ts), 0 if ts[0].dim() == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins ``tensors`` row-wise (dim 0), 1-D tensors as rows."""
    return _C.cat(list(_atleast(2, (_seq("vstack", tensors),))), 0)


row_stack = vstack


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins ``tensors`` depth-wise (dim 2), after ``atleast_3d``."""
    return _C.cat(list(_atleast(3, (_seq("dstack", tensors),))), 2)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins ``tensors`` as columns: 0-D and 1-D tensors become columns, the rest are
    joined along dim 1."""
    ts = [t.reshape(-1, 1) if t.dim() <= 1 else t for t in _seq("column_stack", tensors)]
    return _C.cat(ts, 1)
